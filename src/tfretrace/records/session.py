"""The saved result of one monitored run: summary, JSON schema 1, save/load and merging of workers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfretrace._util import checked as C
from tfretrace._util.io import atomic_write_text
from tfretrace._util.text import printable
from tfretrace.records import display
from tfretrace.records.function_report import FunctionReport

if TYPE_CHECKING:
    # Read back only from a saved file (from_dict): a run writes them through their own methods.
    from tfretrace.records.lint_panel import LintPanel
    from tfretrace.records.output import OutputDigest
    from tfretrace.records.prevention import PreventionReport

SCHEMA = 1
TOOL = "tfretrace"


class SessionFormatError(ValueError):
    """A file that is not a tfretrace session this version can read."""


@dataclass(frozen=True)
class SummaryRow:
    """One line of the ranked summary table."""

    name: str
    location: str
    calls: int
    traces: int
    retraces: int
    trace_seconds: float
    share_of_wall: float
    main_cause: str | None
    worker: str | None
    xla_compiles: int = 0
    xla_compile_seconds: float = 0.0


@dataclass(frozen=True)
class Session:
    """Everything one process (or several merged workers) recorded, ready to render or save."""

    functions: tuple[FunctionReport, ...]
    wall_seconds: float
    tool_version: str = ""
    tensorflow: str | None = None
    keras: str | None = None
    python: str | None = None
    label: str | None = None
    argv: tuple[str, ...] = ()
    started_at: float = 0.0
    internal_errors: int = 0
    internal_error_messages: tuple[str, ...] = ()
    workers: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    # Which Keras tf.keras was: "keras" (Keras 3, or Keras 2 on TF 2.15) or "tf_keras" (Keras 2).
    keras_package: str | None = None
    # The working directory the run's relative paths start from, and a sha256 of each user source
    # file the plans edit, so `tfretrace fix` can refuse a file that changed since the run.
    root: str | None = None
    sources: tuple[tuple[str, str], ...] = ()
    # The profile this run was warmed from and what the warm-ups prevented (tfretrace.prevent).
    prevention: PreventionReport | None = None
    # A merged session: each worker's own wall time, in the order of ``workers``. A function's
    # share of wall is its trace time over its own worker's wall, never over another's.
    worker_walls: tuple[float, ...] = ()
    # A digest of the program's stdout (``run --save``), for ``fix --verify`` to compare the
    # edited run's with; None in sessions of older versions and where it was not recorded.
    stdout: OutputDigest | None = None
    # How many times the fix plan's TensorFlow probe traced the program's bodies after it ended
    # (each ran the body's Python once more), as TensorFlow counted; None where it did not run.
    probe_traces: int | None = None
    # The lint of the run's files, with what the run saw of each finding (the HTML report's panel).
    lint: LintPanel | None = None

    def _repr_html_(self) -> str | None:
        """Jupyter: the full HTML report (the page ``-o report.html`` writes) in a frame, offline."""
        return display.show("session_html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text form: the summary line, not the dataclass's field dump."""
        summary = display.show("session_summary", self) or f"{len(self.functions)} functions"
        printer.text(f"<tfretrace.Session: {summary}>")

    @property
    def total_traces(self) -> int:
        """All traces of all functions."""
        return sum(f.traces for f in self.functions)

    @property
    def total_retraces(self) -> int:
        """Traces beyond each function's first (and its expected variable-creation trace)."""
        return sum(f.retraces for f in self.functions)

    def function(self, name: str) -> FunctionReport:
        """The function whose qualified or display name is ``name``, or ends with ``.name``."""
        for report in self.functions:
            if name in (report.name, report.display_name()):
                return report
        for report in self.functions:
            if report.name.endswith("." + name):
                return report
        raise KeyError(name)

    def wall_of(self, worker: str | None) -> float:
        """The wall time a function of ``worker`` ran in: its worker's own in a merged session."""
        if worker is not None and len(self.worker_walls) == len(self.workers) and worker in self.workers:
            return self.worker_walls[self.workers.index(worker)]
        return self.wall_seconds

    @property
    def process_seconds(self) -> float:
        """The wall time of every process together: the sum of the workers' walls when merged."""
        if self.worker_walls and len(self.worker_walls) == len(self.workers):
            return sum(self.worker_walls)
        return self.wall_seconds

    def share_of_wall(self, report: FunctionReport) -> float:
        """The fraction of its own process's wall time that ``report``'s function spent tracing."""
        wall = self.wall_of(report.worker)
        return report.trace_seconds / wall if wall > 0 else 0.0

    def summary(self) -> list[SummaryRow]:
        """Per function: calls, traces, trace seconds and share of wall time, costliest first."""
        rows = [
            SummaryRow(
                name=f.display_name(),
                location=f.location,
                calls=f.calls,
                traces=f.traces,
                retraces=f.retraces,
                trace_seconds=f.trace_seconds,
                share_of_wall=self.share_of_wall(f),
                main_cause=f.main_cause,
                worker=f.worker,
                xla_compiles=f.xla_compiles,
                xla_compile_seconds=f.xla_compile_seconds,
            )
            for f in self.functions
        ]
        # Cost is tracing plus XLA compiling: both are paid before a call can run.
        rows.sort(key=lambda r: (-(r.trace_seconds + r.xla_compile_seconds), -r.traces, r.name))
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The public JSON form (schema 1, documented in the README)."""
        return {
            "schema": SCHEMA,
            "tool": {"name": TOOL, "version": self.tool_version},
            "tensorflow": self.tensorflow,
            "keras": self.keras,
            "keras_package": self.keras_package,
            "python": self.python,
            "label": self.label,
            "argv": list(self.argv),
            "started_at": self.started_at,
            "wall_seconds": round(self.wall_seconds, 6),
            "internal_errors": self.internal_errors,
            "internal_error_messages": list(self.internal_error_messages),
            "workers": list(self.workers),
            **({"worker_wall_seconds": [round(w, 6) for w in self.worker_walls]} if self.worker_walls else {}),
            "notes": list(self.notes),
            "root": self.root,
            "sources": dict(self.sources),
            "functions": [f.to_dict() for f in self.functions],
            **({} if self.prevention is None else {"prevention": self.prevention.to_dict()}),
            **({} if self.stdout is None else {"output": {"stdout": self.stdout.to_dict()}}),
            **({} if self.probe_traces is None else {"analysis": {"probe_traces": self.probe_traces}}),
            **({} if self.lint is None else {"lint": self.lint.to_dict()}),
        }

    def to_json(self) -> str:
        """The JSON text, indented for people and diffs."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON atomically: a crash never leaves a half-written file behind."""
        return atomic_write_text(path, self.to_json())

    @classmethod
    def from_dict(cls, data: Any, source: str = "<data>") -> Session:
        """Build a session from its JSON form; raise SessionFormatError on anything foreign.

        Every field's type and range is checked here, so that a hostile or damaged file fails
        with one line instead of breaking a renderer later.
        """
        if not isinstance(data, dict) or "schema" not in data or "functions" not in data:
            raise SessionFormatError(f"{source}: not a tfretrace session (no 'schema'/'functions')")
        tool = data.get("tool")
        if not isinstance(tool, dict) or tool.get("name") != TOOL:
            raise SessionFormatError(f"{source}: not a tfretrace session (tool is {_brief(tool)})")
        # type() and not ==: true and 1.0 compare equal to 1 but are not schema 1.
        if type(data["schema"]) is not int or data["schema"] != SCHEMA:
            raise SessionFormatError(
                f"{source}: session schema {_brief(data['schema'])} is not supported "
                f"(this tfretrace reads schema {SCHEMA})"
            )
        try:
            from tfretrace.records.lint_panel import LintPanel
            from tfretrace.records.output import output_from_dict
            from tfretrace.records.prevention import PreventionReport

            functions = C.each(data["functions"], "functions", FunctionReport.from_dict)
            return cls(
                functions=functions,
                wall_seconds=C.seconds(data.get("wall_seconds", 0.0), "wall_seconds"),
                tool_version=C.text(tool.get("version", ""), "tool.version"),
                tensorflow=C.optional_text(data.get("tensorflow"), "tensorflow"),
                keras=C.optional_text(data.get("keras"), "keras"),
                keras_package=C.optional_text(data.get("keras_package"), "keras_package"),
                python=C.optional_text(data.get("python"), "python"),
                label=C.optional_text(data.get("label"), "label"),
                argv=C.texts(data.get("argv", []), "argv"),
                started_at=C.seconds(data.get("started_at", 0.0), "started_at", low=-C.MAX_SECONDS),
                internal_errors=C.count(data.get("internal_errors", 0), "internal_errors"),
                internal_error_messages=C.texts(
                    data.get("internal_error_messages", []), "internal_error_messages"
                ),
                workers=C.texts(data.get("workers", []), "workers"),
                notes=C.texts(data.get("notes", []), "notes"),
                root=C.optional_text(data.get("root"), "root"),
                sources=C.text_map(data.get("sources", {}), "sources"),
                prevention=None if data.get("prevention") is None
                else PreventionReport.from_dict(data["prevention"]),
                worker_walls=C.each(data.get("worker_wall_seconds", []), "worker_wall_seconds", C.seconds),
                stdout=output_from_dict(data.get("output")),
                probe_traces=_probe_traces(data.get("analysis")),
                lint=None if data.get("lint") is None else LintPanel.from_dict(data["lint"]),
            )
        except C.FieldError as exc:
            raise SessionFormatError(f"{source}: malformed tfretrace session: {exc}") from None


def _probe_traces(value: Any) -> int | None:
    """The saved ``analysis.probe_traces``, or None where the session has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise C.FieldError("analysis: expected an object")
    found = value.get("probe_traces")
    return None if found is None else C.count(found, "analysis.probe_traces")


def _brief(value: Any) -> str:
    """A short, printable repr of a foreign value for an error line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load(path: str | os.PathLike[str]) -> Session:
    """Read a session saved by :meth:`Session.save`; one-line SessionFormatError on bad input."""
    data, source = read_document(path)
    return Session.from_dict(data, source)


def read_document(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """The parsed JSON of a file and its printable name; one-line SessionFormatError on bad input."""
    source = printable(os.fsdecode(path))
    file = Path(path)
    try:
        # A FIFO would block forever and /dev/zero never ends: sessions are regular files.
        if file.exists() and not file.is_file():
            raise SessionFormatError(f"{source}: not a regular file")
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SessionFormatError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionFormatError(f"{source}: cannot read ({exc.__class__.__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionFormatError(f"{source}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:  # an integer literal of more than 4300 digits
        raise SessionFormatError(f"{source}: not a usable JSON document ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise SessionFormatError(f"{source}: not a usable JSON document (nested too deeply)") from None
    return data, source


def merge(sessions: list[Session]) -> Session:
    """Merge sessions of several processes or workers into one, each function labelled."""
    if len(sessions) == 1:
        return sessions[0]
    functions: list[FunctionReport] = []
    labels: list[str] = []
    walls: list[float] = []
    for number, session in enumerate(sessions):
        walls.append(session.process_seconds)
        label = session.label or f"worker{number}"
        while label in labels:
            label = f"{label}#{number}"
        labels.append(label)
        functions.extend(replace(f, worker=label) for f in session.functions)
    first = sessions[0]
    return Session(
        functions=tuple(functions),
        wall_seconds=max(s.wall_seconds for s in sessions),
        tool_version=first.tool_version,
        tensorflow=first.tensorflow,
        keras=first.keras,
        keras_package=first.keras_package,
        python=first.python,
        label="merged",
        argv=first.argv,
        started_at=min(s.started_at for s in sessions),
        internal_errors=sum(s.internal_errors for s in sessions),
        internal_error_messages=tuple(m for s in sessions for m in s.internal_error_messages),
        workers=tuple(labels),
        worker_walls=tuple(walls),
        notes=tuple(n for s in sessions for n in s.notes) + divergence_notes(functions, labels),
        root=first.root if all(s.root == first.root for s in sessions) else None,
        sources=tuple(sorted({pair for s in sessions for pair in s.sources})),
    )


def divergence_notes(functions: list[FunctionReport], labels: list[str]) -> tuple[str, ...]:
    """Name functions whose trace counts differ between workers (a hang risk in collectives)."""
    by_name: dict[str, dict[str, int]] = {}
    for report in functions:
        by_name.setdefault(report.name, {})[report.worker or "?"] = report.traces
    notes = []
    for name, counts in sorted(by_name.items()):
        full = {label: counts.get(label, 0) for label in labels}
        if len(set(full.values())) > 1:
            detail = ", ".join(f"{label}: {n}" for label, n in full.items())
            notes.append(f"traces diverge across workers for {name} ({detail})")
    return tuple(notes)
