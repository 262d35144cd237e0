"""The one-line live status ``tfretrace run`` keeps on a terminal: functions, traces, retraces so far."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from tfretrace._util.text import one_line, plural
from tfretrace.records.events import TraceEvent

# At most this many redraws a second: a retrace storm must not become a terminal storm.
REDRAWS_PER_SECOND = 4


class Progress:
    """A monitor listener that keeps one status line on a terminal, out of the program's way.

    The line is drawn only between the program's writes, when the program's last write to the
    terminal ended its line, and erased (``\\r`` and erase-to-end) before the program writes
    again: :meth:`attach` routes ``sys.stdout``/``sys.stderr`` writes through :class:`_Guarded`
    for that. So the program's lines come out on the terminal exactly as without tfretrace.
    :meth:`clear` erases the line before the report is printed. Not rich's Live: it redirects
    ``sys.stdout`` into its console, which buffers the program's partial lines and re-renders
    them (wrapping, markup of ANSI codes), so the program's output would not be its own bytes.
    """

    def __init__(self, stream: TextIO, width: int = 80, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.width = max(20, width)
        self.clock = clock
        self.functions: set[Any] = set()
        self.traces = 0
        self.retraces = 0
        self.last_name = ""
        self._drawn_at = float("-inf")
        self._shown = False
        # Whether the cursor is at the start of a line (the program's last write ended one), and
        # whether counts changed since the last drawing.
        self._line_start = True
        self._stale = False
        self._guarded: list[tuple[str, TextIO, _Guarded]] = []
        self._lock = threading.RLock()

    def __call__(self, state: Any, event: TraceEvent) -> None:
        """Listener entry point: count this trace and redraw when the last redraw is old enough."""
        with self._lock:
            self.functions.add(state.key)
            self.traces += 1
            self.retraces += event.is_retrace
            self.last_name = str(state.name)
            self._stale = True
            self._maybe_draw()

    def line(self) -> str:
        """``tfretrace: 3 functions, 41 traces (38 retraces), last: train_step``, cut to the width."""
        functions, traces = plural(len(self.functions), "function"), plural(self.traces, "trace")
        text = f"tfretrace: {functions}, {traces} ({plural(self.retraces, 'retrace')})"
        if self.last_name:
            text += f", last: {one_line(self.last_name)}"  # one line, whatever the name holds
        # One column short of the width: a full line would wrap on some terminals.
        return text if len(text) < self.width else text[: self.width - 2] + "…"

    def attach(self, terminal: Callable[[TextIO], bool]) -> None:
        """Guard ``sys.stdout`` and ``sys.stderr`` (those on the terminal) for the program's run."""
        with self._lock:
            for name in ("stdout", "stderr"):
                stream = getattr(sys, name)
                if stream is not None and terminal(stream):
                    guarded = _Guarded(stream, self, direct=self.stream if name == "stderr" else None)
                    self._guarded.append((name, stream, guarded))
                    setattr(sys, name, guarded)

    def detach(self) -> None:
        """Give the program's streams back (those it did not replace itself)."""
        with self._lock:
            for name, stream, guarded in self._guarded:
                if getattr(sys, name) is guarded:
                    setattr(sys, name, stream)
            self._guarded = []

    def before_write(self) -> None:
        """The program is about to write to the terminal: erase the status line first."""
        self._erase()

    def after_write(self, text: str) -> None:
        """The program wrote ``text``: a finished line lets the status line be drawn again."""
        if text:
            self._line_start = text.endswith("\n")
            if self._stale:
                self._maybe_draw()

    def _maybe_draw(self) -> None:
        now = self.clock()
        if not self._line_start or now - self._drawn_at < 1 / REDRAWS_PER_SECOND:
            return
        self._drawn_at = now
        self._stale = False
        try:
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()
            self._shown = True
        except (OSError, ValueError):  # a closed or broken terminal: the status is not worth an error
            self._shown = False

    def _erase(self) -> None:
        if self._shown:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._shown = False

    def clear(self) -> None:
        """Erase the status line (before the report, or when the program ends)."""
        with self._lock:
            self._erase()


def _fd2_tapped() -> bool:
    """Whether tfretrace's XLA log tap holds fd 2 (its module loaded only when monitoring)."""
    dispatch = sys.modules.get("tfretrace.runtime.dispatch")
    return dispatch is not None and bool(dispatch.dispatch.xla.tapping())


class _Guarded:
    """The program's ``sys.stdout``/``sys.stderr`` while the status line shows.

    Every attribute is the wrapped stream's; only writing goes through :class:`Progress` first,
    and the text written is the program's, unchanged.
    """

    def __init__(self, stream: TextIO, progress: Progress, direct: TextIO | None = None) -> None:
        self.__dict__["_stream"] = stream
        self.__dict__["_progress"] = progress
        # stderr's own handle on the terminal: while the XLA log tap holds fd 2, text written
        # through the pipe would reach the terminal late, after the status line or later stdout.
        self.__dict__["_direct"] = direct

    def write(self, text: str) -> int:
        progress: Progress = self._progress
        with progress._lock:
            progress.before_write()
            try:
                direct = self._direct
                if direct is not None and isinstance(text, str) and _fd2_tapped():
                    self._stream.flush()  # what went through the pipe before stays first
                    direct.write(text)
                    direct.flush()
                    return len(text)
                return int(self._stream.write(text))
            finally:
                progress.after_write(text if isinstance(text, str) else "")

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._stream, name, value)
