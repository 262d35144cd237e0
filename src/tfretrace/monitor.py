"""The runtime monitor: receives every trace, explains it, keeps bounded history, warns and logs."""

from __future__ import annotations

import logging
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
from tfretrace._records import (
    _MAX_OBJECTS,
    COMPARE_WINDOW,
    DEFAULT_MAX_EVENTS,
    HEAD_EVENTS,
    FunctionState,
    _keras_cause,
    _per_replica,
)
from tfretrace.analyzer import Explanation, Prior, explain
from tfretrace.errors import RetraceError, RetracingWarning
from tfretrace.events import EXPECTED_CAUSES, FunctionReport, Leaf, TraceEvent
from tfretrace.fixes import merge_signature, suggest
from tfretrace.messages import _split_site, format_event
from tfretrace.session import Session

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
    fix: str | None
    calls_total: int
    calls_since: int | None
    object_index: int
    note: str | None = None
    general: list[Leaf] | None = None


class Monitor:
    """Records and explains the traces of every tf.function while it is active."""

    def __init__(
        self, *, warn: bool = True, log: bool = True, max_events: int = DEFAULT_MAX_EVENTS
    ) -> None:
        if max_events <= HEAD_EVENTS:
            raise ValueError(f"max_events must be more than {HEAD_EVENTS}")
        self.warn = warn
        self.log = log
        self.max_events = max_events
        self._lock = threading.RLock()
        self._functions: dict[tuple[str, int, str], FunctionState] = {}
        self._listeners: list[tuple[Listener, bool]] = []
        self._started = time.time()
        self._t0 = time.perf_counter()
        self._stopped_at: float | None = None
        self.internal_errors = 0
        self._error_messages: deque[str] = deque(maxlen=10)
        self._refs: dict[int, Any] = {}
        self.active = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Monitor:
        """Begin receiving traces (installs the TensorFlow hooks on first use)."""
        _registry.add(self)
        self.active = True
        return self

    def stop(self) -> Session:
        """Stop receiving traces and return the session."""
        if self.active:
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

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling a listener added with :meth:`add_listener`."""
        with self._lock:
            self._listeners = [(f, b) for f, b in self._listeners if f is not listener]

    # -- reading -----------------------------------------------------------------------------

    def session(self) -> Session:
        """A snapshot of everything recorded so far."""
        from tfretrace import _tf_adapter

        end = self._stopped_at if self._stopped_at is not None else time.perf_counter()
        with self._lock:
            functions = tuple(self._report(s, _tf_adapter.counter_value) for s in self._functions.values())
        tf_version, keras_version = _tf_adapter.versions()
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
        return FunctionReport(
            name=state.name,
            location=state.location,
            calls=state.calls(read),
            traces=state.traces,
            trace_seconds=state.seconds,
            objects=state.objects,
            events=tuple(state.events()),
            keras=state.keras,
            failed_traces=state.failed_traces,
            dropped_events=state.dropped,
        )

    # -- called from the trace hook ----------------------------------------------------------

    def internal_error(self, exc: BaseException) -> None:
        """Count and remember an error inside tfretrace; the user's program goes on."""
        self.internal_errors += 1
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self._error_messages.append(text)
        logger.debug("tfretrace internal error", exc_info=exc)

    def before_trace(self, raw: Any) -> _Pending | None:
        """Explain the trace about to happen; budgets may raise RetraceError here."""
        from tfretrace import _tf_adapter

        try:
            with self._lock:
                pending = self._prepare(raw, _tf_adapter.counter_value)
        except Exception as exc:
            self.internal_error(exc)
            return None
        before = [f for f, b in self._listeners if b]
        if before:
            event = self._event(raw, pending, 0.0)
            for listener in before:
                try:
                    listener(pending.state, event)
                except RetraceError:
                    raise
                except Exception as exc:
                    self.internal_error(exc)
        return pending

    def after_trace(self, raw: Any, pending: _Pending, seconds: float, ok: bool) -> None:
        """Record the finished trace, then warn and log (a failed trace is only counted)."""
        try:
            with self._lock:
                state = pending.state
                if not ok:
                    state.failed_traces += 1
                    return
                event = self._event(raw, pending, seconds)
                state.traces += 1
                state.seconds += seconds
                state.last_calls_total = pending.calls_total
                state.priors.append(
                    Prior(event.index, raw.token, raw.traced_as or raw.signature, raw.context, raw.object_refs)
                )
                state.add_event(event)
                state.general = pending.general
                listeners = [f for f, b in self._listeners if not b]
        except Exception as exc:
            self.internal_error(exc)
            return
        for listener in listeners:
            try:
                listener(state, event)
            except RetraceError:
                raise
            except Exception as exc:
                self.internal_error(exc)
        if not event.expected:
            self._announce(state, event)

    def _prepare(self, raw: Any, read: Callable[[Any], int]) -> _Pending:
        state = self._functions.get(raw.key)
        if state is None:
            state = FunctionState(raw.key, raw.name, raw.location, self.max_events)
            self._functions[raw.key] = state
        if raw.keras is not None:
            state.keras = raw.keras
        object_index = state.object_index.get(raw.token)
        if object_index is None:
            state.objects += 1
            object_index = state.objects
            state.object_index[raw.token] = object_index
            if len(state.object_index) > _MAX_OBJECTS:
                state.object_index.popitem(last=False)
        else:
            state.object_index.move_to_end(raw.token)
        self._track_counter(state, raw, read)
        priors = [p.as_seen_now() if p.refs else p for p in state.priors]
        explanation = explain(raw.token, raw.signature, raw.context, priors)
        note = None
        if raw.keras is not None:
            explanation, note = _keras_cause(state, raw, explanation)
        elif _per_replica(explanation):
            note = "expected: under a distribution strategy a function called from replica code traces once per device"
        general = merge_signature(state.general, raw.signature)
        fix = suggest(
            explanation.cause,
            explanation.changes,
            raw.signature,
            general,
            name=raw.name,
            location=raw.location,
            call_site=raw.call_site,
            keras=raw.keras,
        )
        calls_total = state.calls(read)
        since = calls_total - state.last_calls_total if state.traces else None
        return _Pending(state, explanation, fix, calls_total, since, object_index, note, general)

    def _track_counter(self, state: FunctionState, raw: Any, read: Callable[[Any], int]) -> None:
        counter = raw.counter
        if counter is None or raw.token in state.counters:
            return
        # Calls made before this monitor started do not count (the current call does); a counter
        # born after the start has seen nothing but monitored calls, from any thread.
        born_after_start = raw.counter_born >= self._t0
        state.counters[raw.token] = (counter, 0 if born_after_start else max(read(counter) - 1, 0))
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

    def _event(self, raw: Any, pending: _Pending, seconds: float) -> TraceEvent:
        explanation = pending.explanation
        return TraceEvent(
            index=pending.state.traces + 1,
            cause=explanation.cause,
            seconds=seconds,
            time=time.perf_counter() - self._t0,
            call_site=raw.call_site,
            signature=raw.signature,
            changes=explanation.changes,
            fix=pending.fix,
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
            expected=explanation.cause in EXPECTED_CAUSES or _per_replica(explanation),
        )

    def _announce(self, state: FunctionState, event: TraceEvent) -> None:
        if not (self.warn or (self.log and logger.isEnabledFor(logging.INFO))):
            return
        message = format_event(state.name, state.location, event)
        if self.log:
            logger.info(message)
        if self.warn:
            filename, lineno = _split_site(event.call_site)
            # warn_explicit with no registry: every retrace is shown, at the user's call site.
            warnings.warn_explicit(message, RetracingWarning, filename, lineno, module="tfretrace")


class _Registry:
    """The active monitors and the one set of TensorFlow hooks they share."""

    def __init__(self) -> None:
        self._monitors: list[Monitor] = []
        self._hooks: Any = None
        self._lock = threading.Lock()

    def add(self, monitor: Monitor) -> None:
        from tfretrace import _tf_adapter

        with self._lock:
            if self._hooks is None:
                self._hooks = _tf_adapter.Hooks(self._on_trace, self._after_trace)
            self._hooks.install()
            if monitor not in self._monitors:
                self._monitors.append(monitor)

    def remove(self, monitor: Monitor) -> None:
        with self._lock:
            if monitor in self._monitors:
                self._monitors.remove(monitor)
            if not self._monitors and self._hooks is not None:
                self._hooks.uninstall()

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
        pendings = [(m, m.before_trace(raw)) for m in monitors]
        return raw, pendings

    def _after_trace(self, token: Any, seconds: float, ok: bool) -> None:
        raw, pendings = token
        for monitor, pending in pendings:
            if pending is not None:
                monitor.after_trace(raw, pending, seconds, ok)


_registry = _Registry()
_process_monitor: Monitor | None = None


def install(*, warn: bool = True, log: bool = True, max_events: int = DEFAULT_MAX_EVENTS) -> Monitor:
    """Monitor the whole process until :func:`stop` (idempotent)."""
    global _process_monitor
    if _process_monitor is None or not _process_monitor.active:
        _process_monitor = Monitor(warn=warn, log=log, max_events=max_events).start()
    return _process_monitor


def stop() -> Session:
    """Stop the process-wide monitor and return its session."""
    global _process_monitor
    if _process_monitor is None:
        raise RuntimeError("tfretrace.stop() called without tfretrace.install()")
    monitor, _process_monitor = _process_monitor, None
    return monitor.stop()


def current() -> Monitor | None:
    """The process-wide monitor, if one is installed."""
    return _process_monitor


@contextmanager
def watch(*, warn: bool = True, log: bool = True, max_events: int = DEFAULT_MAX_EVENTS) -> Iterator[Monitor]:
    """Monitor a block: ``with tfretrace.watch() as mon: ...``; ``mon.session()`` afterwards."""
    monitor = Monitor(warn=warn, log=log, max_events=max_events).start()
    try:
        yield monitor
    finally:
        monitor.stop()
