"""The runtime monitor: receives every trace, explains it, keeps bounded history, warns and logs."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from tfretrace._util.text import split_site
from tfretrace._util.version import __version__
from tfretrace.explain.messages import format_event
from tfretrace.records.errors import RetraceError, RetracingWarning
from tfretrace.records.events import TraceEvent
from tfretrace.records.session import Session
from tfretrace.runtime.analysis import Analysis
from tfretrace.runtime.dispatch import dispatch
from tfretrace.runtime.intake import CallCounting, Pending, make_event, prepare
from tfretrace.runtime.state import (
    COMPARE_WINDOW,
    DEFAULT_MAX_EVENTS,
    HEAD_EVENTS,
    FunctionState,
    report_of,
)
from tfretrace.runtime.xla_watch import build_event

__all__ = [
    "COMPARE_WINDOW",
    "DEFAULT_MAX_EVENTS",
    "HEAD_EVENTS",
    "FunctionState",
    "Listener",
    "Monitor",
    "current",
    "format_event",
    "install",
    "stop",
    "watch",
]

logger = logging.getLogger("tfretrace")

Listener = Callable[["FunctionState", TraceEvent], None]


class Monitor:
    """Records and explains the traces of every tf.function while it is active."""

    def __init__(
        self, *, warn: bool = True, log: bool = True, max_events: int = DEFAULT_MAX_EVENTS,
        keep_tf_warning: bool = False,
    ) -> None:
        if max_events <= HEAD_EVENTS:
            raise ValueError(f"max_events must be more than {HEAD_EVENTS}")
        self.warn = warn
        # TensorFlow's "N out of the last M calls ... triggered tf.function retracing" says less
        # than this monitor's report; it is hidden while a monitor that does not keep it runs.
        self.keep_tf_warning = keep_tf_warning
        self.log = log
        self.max_events = max_events
        self._lock = threading.RLock()
        self._functions: dict[tuple[str, int, str], FunctionState] = {}
        self._listeners: list[tuple[Listener, bool]] = []
        # Called from the XLA log reader thread with (state, XlaEvent) for every compile.
        self._xla_listeners: list[Callable[[FunctionState, Any], None]] = []
        self._started = time.time()
        # Relative paths in reports start here; `tfretrace fix` resolves them against it.
        self._root = os.getcwd()
        self._t0 = time.perf_counter()
        self._stopped_at: float | None = None
        self.internal_errors = 0
        self._error_messages: deque[str] = deque(maxlen=10)
        self._counting = CallCounting(self._lock)
        self._analysis = Analysis(self._root)  # plans, made by session() and analyzed()
        self.active = False
        # Set by `tfretrace run`: tfretrace.stop() called by the program does not end it.
        self.pinned = False
        # Set by `tfretrace run` once the program has ended: only then may analyzed() trace the
        # program's functions again (the probe runs their Python), never while it runs.
        self.program_done = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Monitor:
        """Begin receiving traces (installs the TensorFlow hooks on first use)."""
        dispatch.add(self)
        from tfretrace._tf import counters

        # Calls made before this start belong to no one here: remember where each counter was.
        self._counting.restart(counters.snapshot())
        self.active = True
        return self

    def stop(self) -> Session:
        """Stop receiving traces and return the session."""
        self.halt()
        return self.session()

    def halt(self) -> None:
        """Stop receiving traces (the session is then asked for with :meth:`session` or :meth:`analyzed`)."""
        if self.active:
            dispatch.xla.sync()  # compiles already logged belong to this session
            dispatch.remove(self)
            self.active = False
            self._stopped_at = time.perf_counter()

    def __enter__(self) -> Monitor:
        return self.start() if not self.active else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_listener(self, listener: Listener, *, before_trace: bool = False) -> None:
        """Call ``listener(state, event)`` for every trace; before_trace listeners may raise RetraceError."""
        with self._lock:
            self._listeners.append((listener, before_trace))

    def add_xla_listener(self, listener: Callable[[FunctionState, Any], None]) -> None:
        """Call ``listener(state, xla_event)`` for every XLA compile (on the log reader's thread)."""
        with self._lock:
            self._xla_listeners.append(listener)

    def remove_xla_listener(self, listener: Callable[[FunctionState, Any], None]) -> None:
        """Stop calling a listener added with :meth:`add_xla_listener`."""
        with self._lock:
            # Equality, not identity: a bound method is a new object at every access, and two
            # of the same method on the same object are equal.
            self._xla_listeners = [f for f in self._xla_listeners if f != listener]

    def rearm_xla(self) -> None:
        """Read TensorFlow's compile log again if something (pytest's capture) replaced fd 2."""
        dispatch.xla.rearm(self.internal_error)

    def sync_xla(self) -> None:
        """Wait until the XLA compiles TensorFlow has logged so far are recorded."""
        dispatch.xla.sync()

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling a listener added with :meth:`add_listener`."""
        with self._lock:
            self._listeners = [(f, b) for f, b in self._listeners if f != listener]  # as above

    # -- reading -----------------------------------------------------------------------------

    def record(self) -> Session:
        """What the hooks recorded so far, assembled without analysis: no plan, no file read, no probe."""
        return self._recorded()[0]

    def _recorded(self) -> tuple[Session, list[Any]]:
        """The recorded session and, per function in its order, the live Keras models it saw (read
        in the same lock, so the two lists match), for the analysis stage to ask."""
        from tfretrace._tf import counters, versions

        end = self._stopped_at if self._stopped_at is not None else time.perf_counter()
        dispatch.xla.sync()  # compiles TensorFlow logged before now are recorded
        with self._lock:
            states = list(self._functions.values())
            functions = tuple(report_of(s, counters.counter_value, counters.concrete_sites) for s in states)
            models = [s.keras_models for s in states]
        tf_version, keras_version = versions.loaded_versions()
        recorded = Session(
            functions=functions,
            wall_seconds=end - self._t0,
            tool_version=__version__,
            tensorflow=tf_version,
            keras=keras_version,
            python=sys.version.split()[0],
            argv=tuple(sys.argv),
            started_at=self._started,
            internal_errors=self.internal_errors,
            internal_error_messages=tuple(self._error_messages),
            notes=tuple(dispatch.notes()),
            keras_package=versions.keras_package(),
            root=self._root,
        )
        return recorded, models

    def session(self) -> Session:
        """A snapshot of everything recorded so far, with the fix plans the source and the calls give.

        TensorFlow is never asked here (the probe runs the program's Python again): only
        :meth:`analyzed` asks it, where a plan needs it.
        """
        recorded, models = self._recorded()
        return self._counted(self._analysis.analyze(recorded, self.internal_error, models=models))

    def analyzed(self, *, probe: bool, lint: bool = False) -> Session:
        """The session with plans; ``probe``: TensorFlow traces their signatures, once the program is done.

        ``lint``: with the lint of the run's files (runtime.analysis.Analysis.analyze).
        """
        # A running program must never see its functions traced again.
        probe = probe and self.program_done and not self.active
        recorded, models = self._recorded()
        try:
            return self._counted(
                self._analysis.analyze(recorded, self.internal_error, probe=probe, lint=lint, models=models))
        finally:
            if probe:
                from tfretrace._tf import counters

                counters.keep_retraced(False)  # asked: the closures kept for it go as the program left them

    def keep_for_probe(self) -> None:
        """Keep alive each nested closure that retraces, for :meth:`analyzed` to ask TensorFlow about.

        Only a run that will be asked (``run --save``, ``--fix-plan``) calls this: the objects live on
        until the probe, bounded per def and in defs (``_tf.counters.keep_retraced``).
        """
        from tfretrace._tf import counters

        counters.keep_retraced(True)

    def _counted(self, session: Session) -> Session:
        """``session`` with the internal errors counted so far, the analysis' own included.

        The record is taken before the analysis runs: an error the planner or the probe raised
        would otherwise be counted by the monitor and missing from the session and its report.
        """
        return replace(session, internal_errors=self.internal_errors,
                       internal_error_messages=tuple(self._error_messages))

    def state(self, name: str) -> FunctionState:
        """The live record of the function with this qualified name (tests, budgets)."""
        with self._lock:
            for state in self._functions.values():
                if state.name == name or state.name.endswith("." + name):
                    return state
        raise KeyError(name)

    def states(self) -> list[FunctionState]:
        """All live records."""
        with self._lock:
            return list(self._functions.values())

    def to_dict(self) -> dict[str, Any]:
        """The session's JSON form (see :meth:`Session.to_dict`)."""
        return self.session().to_dict()

    def save(self, path: str) -> Any:
        """Save the session's JSON atomically."""
        return self.session().save(path)

    def record_compile(self, state: FunctionState, trace: int, signature: tuple[Any, ...], done: Any,
                       args: list[tuple[int, str, tuple[int, ...]]]) -> None:
        """Record one XLA compile of a trace of this function (called from the log reader)."""
        if not self.active:
            return
        try:
            with self._lock:
                event = build_event(state, trace, signature, done, args, time.perf_counter() - self._t0)
                state.xla_compiles += 1
                state.xla_seconds += done.seconds
                state.xla_by_cluster[done.cluster] = state.xla_by_cluster.get(done.cluster, 0) + 1
                state.add_xla_event(event)
                listeners = list(self._xla_listeners)
        except Exception as exc:
            self.internal_error(exc)
            return
        for listener in listeners:
            try:
                listener(state, event)
            except Exception as exc:
                self.internal_error(exc)

    # -- called from the trace hook ----------------------------------------------------------

    def internal_error(self, exc: BaseException) -> None:
        """Count and remember an error inside tfretrace; the user's program goes on."""
        self.internal_errors += 1
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self._error_messages.append(text)
        logger.debug("tfretrace internal error", exc_info=exc)

    def before_trace(self, raw: Any) -> Pending | None:
        """Explain the trace about to happen; budgets may raise RetraceError here."""
        from tfretrace._tf import counters

        try:
            with self._lock:
                pending = prepare(
                    self._functions, self.max_events, raw, counters.counter_value, self._counting, self._root
                )
        except Exception as exc:
            self.internal_error(exc)
            return None
        before = [f for f, b in self._listeners if b]
        if before:
            event = make_event(raw, pending, 0.0, 0.0, time.perf_counter() - self._t0)
            for listener in before:
                try:
                    listener(pending.state, event)
                except RetraceError:
                    # Refused: TensorFlow will not trace, so this trace never finishes.
                    self.refuse(pending)
                    raise
                except Exception as exc:
                    self.internal_error(exc)
        return pending

    def refuse(self, pending: Pending) -> None:
        """A budget (this monitor's or another's) refused the trace begun with ``pending``."""
        with self._lock:
            self._release(pending)
            pending.state.refused += 1

    def _release(self, pending: Pending) -> None:
        """Forget a trace that began but will not be recorded; its number is reused if last."""
        state = pending.state
        state.inflight.pop(pending.index, None)
        if state.alongside and state.alongside[-1][0] == pending.index:
            state.alongside.pop()  # the number may be given to another trace
        if pending.index == state.begun:
            state.begun -= 1

    def after_trace(
        self, raw: Any, pending: Pending, seconds: float, ok: bool, cluster: str | None = None,
        own: float | None = None, announce: bool = True, draw: str | None = None,
    ) -> bool:
        """Record the finished trace, then warn and log (a failed trace is only counted).

        ``seconds`` is the trace's whole time, ``own`` the part no nested trace took (default all).
        With several monitors active (nested watch() blocks) only one announces a retrace:
        ``announce`` says whether this one may; returns whether it did.
        """
        try:
            with self._lock:
                state = pending.state
                if not ok:
                    state.failed_traces += 1
                    self._release(pending)
                    return False
                # The key prepare() kept for the running trace becomes a finished trace's key.
                prior = state.inflight.pop(pending.index)
                own = seconds if own is None else own
                event = make_event(raw, pending, own, seconds, time.perf_counter() - self._t0)
                state.record(event, prior)
                state.after_earlier = False
                state.seconds += own
                state.last_calls_total = pending.calls_total
                # The first stateful random op a trace of it drew from (read from the graph when it was made).
                state.draw = state.draw or draw
                listeners = [f for f, b in self._listeners if not b]
            if cluster is not None:
                dispatch.xla.watch(cluster, self, state, event.index, raw.signature)
        except Exception as exc:
            self.internal_error(exc)
            return False
        for listener in listeners:
            try:
                listener(state, event)
            except RetraceError:
                raise
            except Exception as exc:
                self.internal_error(exc)
        if not event.expected and announce:
            return self._announce(state, event)
        return False

    def _announce(self, state: FunctionState, event: TraceEvent) -> bool:
        if not (self.warn or (self.log and logger.isEnabledFor(logging.INFO))):
            return False
        message = format_event(state.name, state.location, event)
        if self.log:
            logger.info(message)
        if self.warn:
            filename, lineno = split_site(event.call_site)
            warning = RetracingWarning.create(message, function=state.name, cause=event.cause, event=event)
            # warn_explicit with no registry: every retrace is shown, at the user's call site.
            warnings.warn_explicit(warning, RetracingWarning, filename, lineno, module="tfretrace")
        return True


_process_monitor: Monitor | None = None


def install(
    *, warn: bool = True, log: bool = True, max_events: int = DEFAULT_MAX_EVENTS,
    keep_tf_warning: bool = False,
) -> Monitor:
    """Monitor the whole process until :func:`stop` (idempotent)."""
    global _process_monitor
    if _process_monitor is None or not _process_monitor.active:
        _process_monitor = Monitor(
            warn=warn, log=log, max_events=max_events, keep_tf_warning=keep_tf_warning
        ).start()
    return _process_monitor


def stop() -> Session:
    """Stop the process-wide monitor and return its session."""
    global _process_monitor
    if _process_monitor is None:
        raise RuntimeError("tfretrace.stop() called without tfretrace.install()")
    monitor = _process_monitor
    if monitor.pinned:
        # `tfretrace run` owns this monitor: the program's own stop() gets what was recorded so
        # far, and the run's report still covers the whole program. It stays the process
        # monitor, so the program's next install() gets it again, not a monitor of its own.
        return monitor.session()
    _process_monitor = None
    return monitor.stop()


def prepare_xla(lower_level: bool = False) -> None:
    """Ask TensorFlow to log XLA compiles, if it is not loaded yet (the pytest plugin's configure).

    ``lower_level``: only for ``tfretrace run``, which owns stderr from before the program starts
    (see XlaWatch.prepare).
    """
    dispatch.xla.prepare(lower_level)


def xla_unavailable() -> str | None:
    """Why XLA compiles cannot be recorded in this process, or None when they can."""
    dispatch.xla.prepare()
    return dispatch.xla.unavailable()


def current() -> Monitor | None:
    """The process-wide monitor, if one is installed."""
    return _process_monitor


@contextmanager
def watch(
    *, warn: bool = True, log: bool = True, max_events: int = DEFAULT_MAX_EVENTS,
    keep_tf_warning: bool = False,
) -> Iterator[Monitor]:
    """Monitor a block: ``with tfretrace.watch() as mon: ...``; ``mon.session()`` afterwards.

    ``keep_tf_warning=True`` keeps TensorFlow's own retracing log line, hidden by default.
    """
    monitor = Monitor(warn=warn, log=log, max_events=max_events, keep_tf_warning=keep_tf_warning).start()
    try:
        yield monitor
    finally:
        monitor.stop()
