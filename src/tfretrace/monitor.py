"""The runtime monitor: receives every trace, explains it, keeps bounded history, warns and logs."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tfretrace import __version__
from tfretrace._earlier import record_earlier
from tfretrace._records import (
    _MAX_OBJECTS,
    COMPARE_WINDOW,
    DEFAULT_MAX_EVENTS,
    HEAD_EVENTS,
    FunctionState,
    _keras_cause,
    _origin_cause,
    _per_replica,
    _variable_creation_clone,
)
from tfretrace._tf import logfilter
from tfretrace._xla_watch import XlaWatch, build_event
from tfretrace.analyzer import Explanation, Prior, explain
from tfretrace.errors import RetraceError, RetracingWarning, UntestedVersionWarning
from tfretrace.events import EXPECTED_CAUSES, FunctionReport, TraceEvent
from tfretrace.fix.apply import source_hashes
from tfretrace.fix.plan import PlanCache
from tfretrace.messages import _split_site, format_event
from tfretrace.session import Session
from tfretrace.xla_events import megamorphic

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


@dataclass
class _Pending:
    state: FunctionState
    explanation: Explanation
    calls_total: int
    calls_since: int | None
    object_index: int
    note: str | None = None
    index: int = 0
    expected: bool | None = None


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
        self._refs: dict[int, Any] = {}
        self._counting_since = self._t0
        self._call_base: dict[int, int] = {}
        self._plans = PlanCache()
        self.active = False
        # Set by `tfretrace run`: tfretrace.stop() called by the program does not end it.
        self.pinned = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Monitor:
        """Begin receiving traces (installs the TensorFlow hooks on first use)."""
        _registry.add(self)
        from tfretrace._tf import counters

        # Calls made before this start belong to no one here: remember where each counter was.
        self._counting_since = time.perf_counter()
        self._call_base = counters.snapshot()
        self.active = True
        return self

    def stop(self) -> Session:
        """Stop receiving traces and return the session."""
        if self.active:
            _registry.xla.sync()  # compiles already logged belong to this session
            _registry.remove(self)
            self.active = False
            self._stopped_at = time.perf_counter()
        return self.session()

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
            self._xla_listeners = [f for f in self._xla_listeners if f is not listener]

    def rearm_xla(self) -> None:
        """Read TensorFlow's compile log again if something (pytest's capture) replaced fd 2."""
        _registry.xla.rearm(self.internal_error)

    def sync_xla(self) -> None:
        """Wait until the XLA compiles TensorFlow has logged so far are recorded."""
        _registry.xla.sync()

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling a listener added with :meth:`add_listener`."""
        with self._lock:
            self._listeners = [(f, b) for f, b in self._listeners if f is not listener]

    # -- reading -----------------------------------------------------------------------------

    def session(self) -> Session:
        """A snapshot of everything recorded so far."""
        from tfretrace._tf import counters, versions

        end = self._stopped_at if self._stopped_at is not None else time.perf_counter()
        _registry.xla.sync()  # compiles TensorFlow logged before now are recorded
        with self._lock:
            functions = tuple(self._report(s, counters.counter_value) for s in self._functions.values())
        functions = self._plans.planned(functions, self.internal_error)
        tf_version, keras_version = versions.loaded_versions()
        return Session(
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
            notes=tuple(_registry.notes()),
            keras_package=versions.keras_package(),
            root=self._root,
            sources=source_hashes(functions, self._root),
        )

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

    def _report(self, state: FunctionState, read: Callable[[Any], int]) -> FunctionReport:
        calls = state.calls(read)
        return FunctionReport(
            name=state.name,
            location=state.location,
            calls=calls,
            traces=state.traces,
            trace_seconds=state.seconds,
            objects=state.objects,
            events=tuple(state.events()),
            keras=state.keras,
            failed_traces=state.failed_traces,
            dropped_events=state.dropped,
            retrace_count=state.retraces,
            xla_compiles=state.xla_compiles,
            xla_compile_seconds=state.xla_seconds,
            xla_events=(*state.xla_head, *state.xla_tail),
            megamorphic=tuple(megamorphic(state.xla_by_cluster, calls)),
            refused_traces=state.refused,
            earlier_traces=state.earlier,
        )

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

    def before_trace(self, raw: Any) -> _Pending | None:
        """Explain the trace about to happen; budgets may raise RetraceError here."""
        from tfretrace._tf import counters

        try:
            with self._lock:
                pending = self._prepare(raw, counters.counter_value)
        except Exception as exc:
            self.internal_error(exc)
            return None
        before = [f for f, b in self._listeners if b]
        if before:
            event = self._event(raw, pending, 0.0, 0.0)
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

    def refuse(self, pending: _Pending) -> None:
        """A budget (this monitor's or another's) refused the trace begun with ``pending``."""
        with self._lock:
            self._release(pending)
            pending.state.refused += 1

    def _release(self, pending: _Pending) -> None:
        """Forget a trace that began but will not be recorded; its number is reused if last."""
        state = pending.state
        state.inflight.pop(pending.index, None)
        if pending.index == state.begun:
            state.begun -= 1

    def after_trace(
        self, raw: Any, pending: _Pending, seconds: float, ok: bool, cluster: str | None = None,
        own: float | None = None, announce: bool = True,
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
                state.inflight.pop(pending.index, None)
                own = seconds if own is None else own
                event = self._event(raw, pending, own, seconds)
                state.traces += 1
                state.retraces += event.is_retrace
                state.count_cause(event.cause)
                state.after_earlier = False
                state.seconds += own
                state.last_calls_total = pending.calls_total
                state.priors.append(
                    Prior(event.index, raw.token, raw.traced_as or raw.signature, raw.context, raw.object_refs)
                )
                state.add_event(event)
                listeners = [f for f, b in self._listeners if not b]
            if cluster is not None:
                _registry.xla.watch(cluster, self, state, event.index, raw.signature)
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

    def _prepare(self, raw: Any, read: Callable[[Any], int]) -> _Pending:
        state = self._functions.get(raw.key)
        if state is None:
            state = FunctionState(raw.key, raw.name, raw.location, self.max_events)
            self._functions[raw.key] = state
        if raw.keras is not None and state.keras is None:
            state.keras = raw.keras
        object_index = state.object_index.get(raw.token)
        if object_index is None:
            state.objects += 1
            object_index = state.objects
            state.object_index[raw.token] = object_index
            if len(state.object_index) > _MAX_OBJECTS:
                state.object_index.popitem(last=False)
            if state.objects <= _MAX_OBJECTS:
                # First meeting: what its cache already holds was traced before. (Past the bound
                # a forgotten object may come back, and its traces must not be counted twice.)
                record_earlier(state, raw, object_index)
        else:
            state.object_index.move_to_end(raw.token)
        # Traces still running count as earlier traces: a recursive tf.function traces itself
        # again inside its first trace, and those nested traces are retraces.
        priors = [p.as_seen_now() if p.refs else p for p in (*state.priors, *state.inflight.values())]
        folded = False
        if raw.keras is not None:
            # A Keras row holds the loop function and the step function: each is compared with
            # its own earlier traces; one begun inside a trace of this row is part of that trace.
            folded = bool(state.inflight)
            if raw.token not in state.codes:
                state.codes[raw.token] = raw.name
                if len(state.codes) > _MAX_OBJECTS:
                    del state.codes[next(iter(state.codes))]
            priors = [p for p in priors if state.codes.get(p.token) == raw.name]
        if not folded:
            # The row's calls are the user's calls: a step function called only from inside the
            # loop function's trace is not called by anyone else.
            self._track_counter(state, raw, read)
        if raw.origin == "data":
            state.dead_calls += 1  # tf.data calls its functions in C++: its calls are the builds
        explanation = _variable_creation_clone(explain(raw.token, raw.signature, raw.context, priors))
        state.begun += 1
        index = state.begun
        state.inflight[index] = Prior(index, raw.token, raw.traced_as or raw.signature, raw.context, raw.object_refs)
        note = None
        expected = None
        if raw.keras is not None:
            explanation, note, expected = _keras_cause(state, raw, explanation, folded)
        elif raw.origin is not None or raw.saving:
            explanation, note, expected = _origin_cause(raw, explanation)
        elif _per_replica(explanation):
            note = "expected: under a distribution strategy a function called from replica code traces once per device"
        calls_total = state.calls(read)
        # Calls since an earlier trace (made before the monitor met the object) are unknown.
        since = calls_total - state.last_calls_total if state.traces and not state.after_earlier else None
        # No fix at trace time: a fix is shown only once the plan has checked it against every
        # call of the run (Session's events carry it, from the plan).
        return _Pending(state, explanation, calls_total, since, object_index, note, index, expected)

    def _track_counter(self, state: FunctionState, raw: Any, read: Callable[[Any], int]) -> None:
        counter = raw.counter
        if counter is None or raw.token in state.counters:
            return
        if any(known is counter for known, _ in state.counters.values()):
            return  # a copy of a tf.function object shares its counter: count its calls once
        # Calls made before this monitor started do not count: a counter born after the start has
        # seen only monitored calls; an older one counts from its value at the start.
        if raw.counter_born >= self._counting_since:
            base = 0
        else:
            base = self._call_base.get(id(counter), max(read(counter) - 1, 0))
        state.counters[raw.token] = (counter, base)
        owner_ref = raw.owner_ref
        if owner_ref is None:
            return
        token = raw.token
        monitor_ref = weakref.ref(self)

        def fold(_: Any) -> None:
            # The tf.function object died: keep its call count, drop the counter.
            monitor = monitor_ref()
            if monitor is None:
                return
            with monitor._lock:
                entry = state.counters.pop(token, None)
                monitor._refs.pop(id(fold), None)
                if entry is not None:
                    state.dead_calls += read(entry[0]) - entry[1]

        target = owner_ref()
        if target is not None:
            self._refs[id(fold)] = weakref.ref(target, fold)
        del target

    def _event(self, raw: Any, pending: _Pending, seconds: float, inclusive: float) -> TraceEvent:
        explanation = pending.explanation
        return TraceEvent(
            index=pending.index,
            cause=explanation.cause,
            seconds=seconds,
            inclusive_seconds=inclusive,
            time=time.perf_counter() - self._t0,
            call_site=raw.call_site,
            signature=raw.signature,
            changes=explanation.changes,
            fix=None,
            calls_since_previous=pending.calls_since,
            calls_total=pending.calls_total,
            object_index=pending.object_index,
            closest=explanation.closest,
            traced_as=raw.traced_as,
            context=raw.context,
            thread=raw.thread,
            raw_key=raw.raw_key() if explanation.cause == "unexplained" else None,
            nested=raw.nested,
            keras=raw.keras,
            note=pending.note,
            expected=explanation.cause in EXPECTED_CAUSES or _per_replica(explanation)
            if pending.expected is None else pending.expected,
        )

    def _announce(self, state: FunctionState, event: TraceEvent) -> bool:
        if not (self.warn or (self.log and logger.isEnabledFor(logging.INFO))):
            return False
        message = format_event(state.name, state.location, event)
        if self.log:
            logger.info(message)
        if self.warn:
            filename, lineno = _split_site(event.call_site)
            warning = RetracingWarning.create(message, function=state.name, cause=event.cause, event=event)
            # warn_explicit with no registry: every retrace is shown, at the user's call site.
            warnings.warn_explicit(warning, RetracingWarning, filename, lineno, module="tfretrace")
        return True


class _Registry:
    """The active monitors and the one set of TensorFlow hooks they share."""

    def __init__(self) -> None:
        self._monitors: list[Monitor] = []
        self._hooks: Any = None
        self._lock = threading.Lock()
        self._unavailable: str | None = None
        self._tf_filter = logfilter.TFRetracingFilter(
            lambda: any(not m.keep_tf_warning for m in self._monitors)
        )
        self.xla = XlaWatch()

    def add(self, monitor: Monitor) -> None:
        from tfretrace._tf import hooks
        from tfretrace._tf.frames import call_site

        # Before TensorFlow loads (hooks.install imports it): ask it to log XLA compiles.
        self.xla.prepare()
        self.xla.arm(monitor.internal_error)
        with self._lock:
            if self._hooks is None:
                self._hooks = hooks.Hooks(self._on_trace, self._after_trace)
            if not monitor.keep_tf_warning:
                self._tf_filter.attach()
            try:
                self._hooks.install()
                self._unavailable = None
                self.xla.loaded()
            except hooks.HookUnavailable as exc:
                # Nothing was patched: the program runs on unobserved and the session says so.
                if self._unavailable != str(exc):
                    filename, lineno = _split_site(call_site(sys._getframe(1)))
                    text = f"tfretrace: {exc}"
                    warnings.warn_explicit(text, UntestedVersionWarning, filename, lineno, module="tfretrace")
                self._unavailable = str(exc)
            if monitor not in self._monitors:
                self._monitors.append(monitor)

    def notes(self) -> list[str]:
        """Version notes and what could not be observed, for the session."""
        notes = list(self._hooks.notes) if self._hooks is not None else []
        if self._unavailable is not None:
            notes.append(self._unavailable)
        if self.xla.note is not None:
            notes.append(self.xla.note)
        return notes

    def remove(self, monitor: Monitor) -> None:
        with self._lock:
            if monitor in self._monitors:
                self._monitors.remove(monitor)
            if all(m.keep_tf_warning for m in self._monitors):
                self._tf_filter.detach()  # on TensorFlow's logger only while some monitor hides
            if not self._monitors and self._hooks is not None:
                self._hooks.uninstall()
        if not self._monitors:
            self.xla.stop()

    def _on_trace(self, read: Callable[[], Any]) -> Any:
        monitors = list(self._monitors)
        if not monitors:
            return None
        try:
            raw = read()
        except Exception as exc:
            for monitor in monitors:
                monitor.internal_error(exc)
            return None
        pendings: list[tuple[Monitor, _Pending | None]] = []
        refused: RetraceError | None = None
        for monitor in monitors:
            try:
                pendings.append((monitor, monitor.before_trace(raw)))
            except RetraceError as exc:
                refused = refused or exc
        if refused is not None:
            # A budget refused the trace: every monitor records it as refused, none as traced.
            for monitor, pending in pendings:
                if pending is not None:
                    monitor.refuse(pending)
            raise refused
        return raw, pendings

    def _after_trace(
        self, token: Any, seconds: float, ok: bool, cluster: str | None, own: float | None = None
    ) -> None:
        raw, pendings = token
        announced = False
        for monitor, pending in pendings:
            if pending is not None:
                # Nested watch() blocks record the trace each, and announce it once.
                announced = (
                    monitor.after_trace(raw, pending, seconds, ok, cluster, own, not announced) or announced
                )


_registry = _Registry()
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
    monitor, _process_monitor = _process_monitor, None
    if monitor.pinned:
        # `tfretrace run` owns this monitor: the program's own stop() gets what was recorded so
        # far, and the run's report still covers the whole program.
        return monitor.session()
    return monitor.stop()


def prepare_xla() -> None:
    """Ask TensorFlow to log XLA compiles, if it is not loaded yet (the pytest plugin's configure)."""
    _registry.xla.prepare()


def xla_unavailable() -> str | None:
    """Why XLA compiles cannot be recorded in this process, or None when they can."""
    _registry.xla.prepare()
    return _registry.xla.unavailable()


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
