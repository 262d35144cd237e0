"""IPython and Jupyter: ``%load_ext tfretrace`` watches every cell; ``%%tfretrace`` reports one cell."""

from __future__ import annotations

from typing import Any

from tfretrace._util.text import one_line
from tfretrace.records.prevention import PreventionReport
from tfretrace.records.prevention import render as render_prevention
from tfretrace.records.session import Session, SessionFormatError
from tfretrace.render.notebook import CellRetraces, report_frame
from tfretrace.render.text import TextRenderer
from tfretrace.runtime.monitor import Monitor, watch
from tfretrace.runtime.prevent import prevent

_KEY = "_tfretrace_cells"
_PREVENT_KEY = "_tfretrace_prevention"


class SessionView:
    """Displays a session: the full HTML report in a notebook, the text report in a terminal."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def _repr_html_(self) -> str:
        return report_frame(self.session)

    def __repr__(self) -> str:
        return TextRenderer(width=100).render(self.session)


class CellView:
    """Displays what one cell retraced, compactly (under the cell's own output)."""

    def __init__(self, cell: CellRetraces) -> None:
        self.cell = cell

    def _repr_html_(self) -> str:
        return self.cell.html()

    def __repr__(self) -> str:
        return self.cell.text()


class CellWatcher:
    """One monitor for the whole kernel; after each cell, the retraces that cell caused."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.monitor = Monitor(warn=False, log=False).start()
        # Traces of each function already reported: a later cell shows only its own.
        self.seen: dict[tuple[str, str, str | None], int] = {}
        # Inside %%tfretrace the cell gets the full report instead of the compact one.
        self.in_magic = False

    def post_run_cell(self, result: Any) -> None:
        """IPython event: show a compact report when this cell retraced anything."""
        raw = str(getattr(getattr(result, "info", None), "raw_cell", "") or "")
        try:
            cell = self.collect()
        except Exception as exc:  # the notebook goes on; tfretrace says once what went wrong
            self.monitor.internal_error(exc)
            return
        if cell.functions and not self.in_magic and not raw.lstrip().startswith("%%tfretrace"):
            from IPython.display import display

            display(CellView(cell))  # type: ignore[no-untyped-call]

    def collect(self) -> CellRetraces:
        """The functions that retraced since the last call, with the events that did it."""
        found = []
        for report in self.monitor.session().functions:
            key = (report.name, report.location, report.worker)
            before = self.seen.get(key, 0)
            self.seen[key] = report.traces
            # Traces read from TensorFlow's cache when the monitor first met a function were
            # made by cells run before %load_ext: not this cell's.
            new = tuple(e for e in report.events if e.index > before and not e.earlier)
            if any(e.is_retrace for e in new):
                found.append((report, new))
        return CellRetraces(tuple(found))

    def stop(self) -> Session:
        """Stop watching; the session of everything since ``%load_ext``."""
        self.shell.events.unregister("post_run_cell", self.post_run_cell)
        return self.monitor.stop()


def load(shell: Any) -> None:
    """``%load_ext tfretrace``: watch every cell, register ``%tfretrace`` / ``%%tfretrace`` (idempotent)."""
    if getattr(shell, _KEY, None) is not None:
        return
    watcher = CellWatcher(shell)
    setattr(shell, _KEY, watcher)
    shell.events.register("post_run_cell", watcher.post_run_cell)
    shell.register_magic_function(_magic, magic_kind="line_cell", magic_name="tfretrace")


def unload(shell: Any) -> None:
    """``%unload_ext tfretrace``: stop watching cells."""
    watcher = getattr(shell, _KEY, None)
    if watcher is not None:
        watcher.stop()
        setattr(shell, _KEY, None)


class PreventionView:
    """Displays what a profile's warm-ups prevented (``%tfretrace prevent off``)."""

    def __init__(self, report: PreventionReport) -> None:
        self.report = report

    def __repr__(self) -> str:
        return render_prevention(self.report)


def _prevent(shell: Any, argument: str) -> PreventionView | None:
    """``%tfretrace prevent PROFILE.json`` warms profiled functions; ``%tfretrace prevent off`` reports."""
    running = getattr(shell, _PREVENT_KEY, None)
    if argument in ("", "off"):
        if running is None:
            print("tfretrace: no profile in use (%tfretrace prevent PROFILE.json)")
            return None
        setattr(shell, _PREVENT_KEY, None)
        session = running.stop()
        return None if session.prevention is None else PreventionView(session.prevention)
    watcher = getattr(shell, _KEY, None)
    try:
        started = prevent(argument, monitor=watcher.monitor if watcher is not None else None)
    except SessionFormatError as exc:
        print(f"tfretrace: error: {one_line(str(exc))}")
        return None
    if running is not None:
        running.stop()
    setattr(shell, _PREVENT_KEY, started)
    print(f"tfretrace: warming the functions {argument} recorded at their first call "
          "(%tfretrace prevent off to stop and report)")
    return None


def _magic(line: str, cell: str | None = None) -> SessionView | PreventionView | None:
    """``%tfretrace``: the report of every cell so far; ``%%tfretrace``: run this cell, report it."""
    from IPython import get_ipython

    shell = get_ipython()
    words = line.split(None, 1)
    if cell is None and words[:1] == ["prevent"]:
        return _prevent(shell, words[1].strip() if len(words) > 1 else "")
    if cell is None:
        watcher = getattr(shell, _KEY, None)
        if watcher is None:
            return None
        return SessionView(watcher.monitor.session())
    watcher = getattr(shell, _KEY, None)
    if watcher is not None:
        watcher.in_magic = True
    try:
        with watch(warn=False, log=False) as monitor:
            shell.run_cell(cell)
    finally:
        if watcher is not None:
            watcher.in_magic = False
    return SessionView(monitor.session())
