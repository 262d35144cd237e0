"""The one-line live status ``tfretrace run`` keeps on a terminal: functions, traces, retraces so far."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from tfretrace._text import one_line, plural
from tfretrace.events import TraceEvent

# At most this many redraws a second: a retrace storm must not become a terminal storm.
REDRAWS_PER_SECOND = 4


class Progress:
    """A monitor listener that redraws one status line on a terminal stream after each trace.

    Like a progress bar it owns the line it last drew: ``\\r`` and erase-to-end rewrite it in
    place; the program's own output simply continues after it. :meth:`clear` erases it before
    the report is printed.
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
        self._lock = threading.Lock()

    def __call__(self, state: Any, event: TraceEvent) -> None:
        """Listener entry point: count this trace and redraw when the last redraw is old enough."""
        with self._lock:
            self.functions.add(state.key)
            self.traces += 1
            self.retraces += event.is_retrace
            self.last_name = str(state.name)
            now = self.clock()
            if now - self._drawn_at < 1 / REDRAWS_PER_SECOND:
                return
            self._drawn_at = now
            self._draw()

    def line(self) -> str:
        """``tfretrace: 3 functions, 41 traces (38 retraces), last: train_step``, cut to the width."""
        functions, traces = plural(len(self.functions), "function"), plural(self.traces, "trace")
        text = f"tfretrace: {functions}, {traces} ({plural(self.retraces, 'retrace')})"
        if self.last_name:
            text += f", last: {one_line(self.last_name)}"  # one line, whatever the name holds
        # One column short of the width: a full line would wrap on some terminals.
        return text if len(text) < self.width else text[: self.width - 2] + "…"

    def _draw(self) -> None:
        try:
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()
            self._shown = True
        except (OSError, ValueError):  # a closed or broken terminal: the status is not worth an error
            self._shown = False

    def clear(self) -> None:
        """Erase the status line (before the report, or when the program ends)."""
        with self._lock:
            if self._shown:
                try:
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass
                self._shown = False
