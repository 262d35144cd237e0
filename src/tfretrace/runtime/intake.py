"""One trace's intake: find its function's record, explain and number the trace, count the calls."""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfretrace.explain.analyzer import Explanation, Prior, explain
from tfretrace.records.events import TraceEvent
from tfretrace.runtime.earlier import record_earlier
from tfretrace.runtime.state import (
    _MAX_OBJECTS,
    FunctionState,
    _keras_cause,
    _origin_cause,
    _per_replica,
    _variable_creation_clone,
    data_source_cause,
    expected_by_default,
    note_alongside,
)

WARMUP_NOTE = (
    "prevention warm-up: one general trace made at the function's first call from the profile "
    "(tfretrace run --prevent); not a retrace"
)


@dataclass
class Pending:
    """A trace that has begun: its explanation and numbers, until it finishes or is refused."""

    state: FunctionState
    explanation: Explanation
    calls_total: int
    calls_since: int | None
    object_index: int
    note: str | None = None
    index: int = 0
    expected: bool | None = None
    warmup: bool = False


class CallCounting:
    """Which call counters count each function's calls, from what value, for one monitor."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._since = time.perf_counter()
        self._base: dict[int, int] = {}
        # Weak references to tf.function objects, kept alive here so that their callbacks run.
        self._refs: dict[int, Any] = {}

    def restart(self, base: dict[int, int]) -> None:
        """Count from now: ``base`` is every existing counter's value at the monitor's start."""
        self._since = time.perf_counter()
        self._base = base

    def track(self, state: FunctionState, raw: Any, read: Callable[[Any], int]) -> None:
        """Start counting the calls of the tf.function object behind ``raw``, once."""
        counter = raw.counter
        if counter is None or raw.token in state.counters:
            return
        if any(known is counter for known, _ in state.counters.values()):
            return  # a copy of a tf.function object shares its counter: count its calls once
        # Calls made before this monitor started do not count: a counter born after the start has
        # seen only monitored calls; an older one counts from its value at the start.
        base = 0 if raw.counter_born >= self._since else self._base.get(id(counter), max(read(counter) - 1, 0))
        state.counters[raw.token] = (counter, base)
        owner_ref = raw.owner_ref
        if owner_ref is None:
            return
        token = raw.token
        counting_ref = weakref.ref(self)

        def fold(_: Any) -> None:
            # The tf.function object died: keep its call count, drop the counter.
            counting = counting_ref()
            if counting is None:
                return
            with counting._lock:
                entry = state.counters.pop(token, None)
                counting._refs.pop(id(fold), None)
                if entry is not None:
                    state.dead_calls += read(entry[0]) - entry[1]

        target = owner_ref()
        if target is not None:
            self._refs[id(fold)] = weakref.ref(target, fold)
        del target


def prepare(
    functions: dict[tuple[str, int, str], FunctionState], max_events: int, raw: Any,
    read: Callable[[Any], int], counting: CallCounting, root: str = "",
) -> Pending:
    """Explain the trace about to happen and give it its number (under the monitor's lock).

    ``root``: the folder the function's key (its module) is taken from; default the current one.
    """
    state = functions.get(raw.key)
    if state is None:
        state = FunctionState(raw.key, raw.name, raw.location, max_events)
        state.function_key = _function_key(raw, root or os.getcwd())
        functions[raw.key] = state
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
    priors = state.comparable_priors()
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
        counting.track(state, raw, read)
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
        if explanation.cause == "keras-new-model":
            note_alongside(state, index, raw.token, read)
    elif raw.origin is not None or raw.saving:
        explanation, note, expected = _origin_cause(raw, explanation, priors)
        if raw.data_source is not None:
            explanation, note, expected = data_source_cause(state, raw.data_source, explanation, note, expected)
    elif raw.library_site is not None and explanation.cause == "new-function-object":
        explanation, note, expected = _library_object(raw.library_site, object_index)
    elif _per_replica(explanation):
        note = "expected: under a distribution strategy a function called from replica code traces once per device"
    elif explanation.cause == "new-function-object":
        # Another object of the user's def (an instance's method, a closure kept in a dict): where an earlier
        # object is called again after this trace, they are in use side by side (reported_events).
        note_alongside(state, index, raw.token, read)
    from tfretrace._tf.counters import warming_now

    warmup = warming_now()
    if warmup:
        # tfretrace's own general trace (prevention): expected, whatever it differs in.
        note, expected = WARMUP_NOTE, True
    calls_total = state.calls(read)
    # Calls since an earlier trace (made before the monitor met the object) are unknown.
    since = calls_total - state.last_calls_total if state.traces and not state.after_earlier else None
    # No fix at trace time: a fix is shown only once the plan has checked it against every
    # call of the run (Session's events carry it, from the plan).
    return Pending(state, explanation, calls_total, since, object_index, note, index, expected, warmup)


def _library_object(site: str | None, object_index: int) -> tuple[Explanation, str, bool]:
    """A library's own tf.function made again for another of its objects: that object's first trace.

    TF Probability makes one per distribution, tf-keras one adapt_step per layer: distinct
    objects, each traced once, that no edit of the user's code could share.
    """
    made = f" for the call at {site}" if site else ""
    note = (
        f"tf.function object #{object_index} that the library made{made}: a library makes one per "
        "object of its own (a distribution, a layer), and each is traced once; not a retrace"
    )
    return Explanation("first-trace", (), ()), note, True


def _function_key(raw: Any, root: str) -> Any:
    # The key only helps compare runs: a failure to make one must not lose the trace.
    try:
        return raw.function_key(root)
    except Exception:
        return None


def make_event(raw: Any, pending: Pending, seconds: float, inclusive: float, at: float) -> TraceEvent:
    """The recorded event of a trace; ``at`` is its time in seconds since the monitor began."""
    explanation = pending.explanation
    return TraceEvent(
        index=pending.index,
        cause=explanation.cause,
        seconds=seconds,
        inclusive_seconds=inclusive,
        time=at,
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
        expected=expected_by_default(explanation) if pending.expected is None else pending.expected,
        warmup=pending.warmup,
    )
