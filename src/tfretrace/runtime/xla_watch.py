"""Joining XLA compiles to traces: starts the log tap, maps cluster names to traces, hands compiles to monitors."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfretrace.records.events import Leaf
from tfretrace.records.xla_events import XlaEvent
from tfretrace.runtime.state import FunctionState, compile_signature, explain_compile

# How many jit_compile traces are remembered for joining (each costs a name and a signature).
_MAX_CLUSTERS = 4096


@dataclass(frozen=True)
class _Target:
    monitor: Any
    state: FunctionState
    trace: int
    signature: tuple[Leaf, ...]


class XlaWatch:
    """Owns the fd-2 tap from the first jit_compile trace while a monitor runs; compiles of
    unmonitored clusters are ignored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clusters: dict[str, list[_Target]] = {}
        self._tap: Any = None
        self._swallow: frozenset[str] = frozenset()
        # None: not decided yet; True: TensorFlow logs compiles; False: it was loaded too early.
        self._enabled: bool | None = None
        self.note: str | None = None
        self._silenced: str | None = None
        self._errors: list[Callable[[BaseException], None]] = []
        self._exit_registered = False
        self._original_env: str | None = None
        self._restored = False
        # tfretrace run with TF_CPP_MIN_LOG_LEVEL=N: TensorFlow logs everything, the tap hides
        # again what level N hides, for the rest of the process.
        self._hide_below = 0
        self._original_level: str | None = None
        # Until the program imports TensorFlow: what lowers the level and starts the tap then.
        self._waiting: Any = None

    def prepare(self, lower_level: bool = False) -> None:
        """Before TensorFlow is imported: ask it to log compiles (kept for the process).

        ``lower_level`` (``tfretrace run``, which starts before the program): a user's
        TF_CPP_MIN_LOG_LEVEL above 0 would hide the compile lines; TensorFlow loads with 0 instead
        and the tap hides every line of a severity the user's level hides. Both happen as the
        program begins to import TensorFlow: until then the program has its own level and its
        own stderr, as under python, and a program that never imports TensorFlow starts no relay.
        """
        from tfretrace._tf import xla

        if self._enabled is not None:
            return
        if lower_level and not xla.tensorflow_loaded():
            self._original_level = os.environ.get(xla.MIN_LEVEL_ENV)
            self._hide_below = xla.user_level()
        # A level tfretrace lowers does not silence TensorFlow's compile lines.
        self._silenced = None if self._hide_below else xla.silenced()
        if self._silenced is not None:
            self._enabled = False  # TensorFlow would not print the lines: no tap, no request
        elif xla.tensorflow_loaded():
            self._enabled = xla.requested()
        else:
            self._original_env = os.environ.get(xla.ENV)
            self._swallow = xla.request()
            self._enabled = True
        if self._hide_below:
            # From the start of TensorFlow's import on: its import logs INFO lines the user hides.
            from tfretrace._tf.import_watch import ImportWatcher

            self._waiting = ImportWatcher({"tensorflow"}, before=self._tensorflow_importing)
            sys.meta_path.insert(0, self._waiting)

    def _tensorflow_importing(self, _name: str) -> None:
        """The program imports TensorFlow: it reads the lowered level as it loads; the tap reads its log.

        The level hidden again is the program's now, which TensorFlow would read under python (a
        program may set it in its first lines); it goes back into the environment after the import.
        """
        from tfretrace._tf import xla

        self._stop_waiting()
        if self._restored:
            return
        self._original_level = os.environ.get(xla.MIN_LEVEL_ENV)
        self._hide_below = xla.lower_level()
        if self._hide_below:
            self._start_tap()

    def _stop_waiting(self) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is not None and waiting in sys.meta_path:
            sys.meta_path.remove(waiting)

    def unavailable(self) -> str | None:
        """Why compiles cannot be recorded (TensorFlow loaded first, or silenced), else None."""
        from tfretrace._tf import xla

        if self._enabled:
            return None
        return self._silenced or xla.how_to_enable()

    def loaded(self) -> None:
        """After TensorFlow's import: the user's TF_CPP_VMODULE again (TensorFlow has read ours)."""
        from tfretrace._tf import xla

        if (self._swallow or self._hide_below) and xla.tensorflow_loaded() and not self._restored:
            if self._swallow:
                xla.restore(self._original_env)
            if self._hide_below:
                xla.restore_level(self._original_level)
            self._restored = True

    def arm(self, on_error: Callable[[BaseException], None]) -> None:
        """Get ready without touching fd 2: the tap starts at the first jit_compile trace (watch).

        A program that never compiles with XLA keeps its own stderr, untouched: no pipe, no
        reader thread, nothing that a crash could leave unwritten.
        """
        self._errors = [on_error]

    def rearm(self, on_error: Callable[[BaseException], None]) -> None:
        """Read TensorFlow's log again after fd 2 was replaced, if XLA is in use at all."""
        if self._clusters:
            self.start(on_error)
        else:
            self.arm(on_error)

    def start(self, on_error: Callable[[BaseException], None]) -> None:
        """Start (or re-arm) the tap when TensorFlow logs compiles."""
        self._errors = [on_error]
        self._start_tap()

    def _start_tap(self) -> None:
        from tfretrace._tf import xla, xla_log

        if not self._enabled:
            return
        with self._lock:
            if self._tap is not None and self._tap.active:
                return
            if self._tap is not None:
                self._tap.stop()
            try:
                self._tap = xla.Tap(xla_log.Parser(self._swallow, self._hide_below), self._on_compile, self._error)
                self._tap.start()
            except OSError as exc:  # no fd 2, or no pipes: XLA compiles go unobserved
                self._tap = None
                self._enabled = False
                if self._hide_below and not self._restored:  # nothing could hide the lines again
                    xla.restore_level(self._original_level)
                    self._hide_below = 0
                self.note = f"XLA compiles not observed: cannot read TensorFlow's log ({exc})"
                return
        if not self._exit_registered:
            atexit.register(self.stop, final=True)
            self._exit_registered = True

    def stop(self, final: bool = False) -> None:
        """Drain and remove the tap; fd 2 is the original again.

        While it hides what the user's lowered log level would have hidden, the tap stays until
        the process ends (``final``): TensorFlow keeps logging at level 0 after the monitor stops.
        """
        self._stop_waiting()  # a TensorFlow imported after the monitor stopped is not tapped
        with self._lock:
            self._clusters.clear()
            if self._hide_below and not final:
                return
            tap, self._tap = self._tap, None
        if tap is not None:
            tap.stop()

    def tapping(self) -> bool:
        """Whether fd 2 is the tap's pipe right now (what is written there reaches stderr later)."""
        tap = self._tap
        return tap is not None and bool(tap.active)

    def sync(self) -> None:
        """Wait until the compiles TensorFlow has logged so far are recorded."""
        tap = self._tap
        if tap is not None:
            tap.sync()

    def watch(self, cluster: str, monitor: Any, state: FunctionState, trace: int,
              signature: tuple[Leaf, ...]) -> None:
        """Attribute the future compiles of ``cluster`` to this trace of this function."""
        if not self._enabled:
            if self._enabled is False and self.note is None:
                from tfretrace._tf import xla

                self.note = self._silenced or xla.how_to_enable()
            return
        with self._lock:
            if self._tap is not None and not self._tap.active:
                # Something (pytest's capture, the program) put another file on fd 2: re-arm.
                self._tap.stop()
                self._tap = None
            self._clusters.setdefault(cluster, []).append(_Target(monitor, state, trace, signature))
            while len(self._clusters) > _MAX_CLUSTERS:
                self._clusters.pop(next(iter(self._clusters)))
            rearm = self._tap is None
        if rearm and self._errors:
            self.start(self._errors[0])

    def _error(self, exc: BaseException) -> None:
        for report in self._errors:
            report(exc)

    def _on_compile(self, done: Any) -> None:
        with self._lock:
            targets = list(self._clusters.get(done.cluster, ()))
        args = [(a.tf_arg, a.dtype, a.shape) for a in done.args]
        for target in targets:
            target.monitor.record_compile(target.state, target.trace, target.signature, done, args)


def build_event(state: FunctionState, trace: int, signature: tuple[Leaf, ...], done: Any,
                args: list[tuple[int, str, tuple[int, ...]]], now: float) -> XlaEvent:
    """The explained event for one compile, numbered after the function's earlier ones."""
    leaves = compile_signature(signature, args)
    cause, changes, closest = explain_compile(leaves, list(state.xla_by_trace.get(trace, ())))
    return XlaEvent(
        index=state.xla_compiles + 1,
        trace=trace,
        cause=cause,
        seconds=done.seconds,
        signature=leaves,
        changes=changes,
        closest=closest,
        cluster=done.cluster,
        tf_count=done.tf_count,
        time=now,
    )

