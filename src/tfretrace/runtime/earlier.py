"""Traces made before a monitor met a tf.function: read once from its cache, recorded as earlier events."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tfretrace.explain.analyzer import Explanation, Prior, explain
from tfretrace.records.events import TraceEvent
from tfretrace.runtime.state import FunctionState, _variable_creation_clone, expected_by_default, framework_cause

NOTE = "traced before this monitor met the function: read from TensorFlow's cache (call site and cost unknown)"


def record_earlier(state: FunctionState, raw: Any, object_index: int) -> int:
    """Record the traces the tf.function object behind ``raw`` already has; return how many.

    Called when a monitor first meets the object, before its new trace is explained, so that
    the new trace is compared with every trace the object has, whoever made them. Each earlier
    trace is explained against the ones before it (cache order is trace order), exactly as if
    it had been seen live, and counted in ``traces`` like TensorFlow's own count. Keras rows are
    left alone: their rules (one row per model and role, the step function folded into the loop
    function) are about traces seen live. Never raises for what TensorFlow holds.
    """
    if raw.keras is not None or raw.owner_ref is None:
        return 0
    owner = raw.owner_ref()
    if owner is None:
        return 0
    from tfretrace._tf.earlier import cached_traces

    traces = cached_traces(owner)
    del owner  # no reference to the user's tf.function beyond this call
    for trace in traces:
        explanation = _saved_earlier(
            trace.context,
            _variable_creation_clone(explain(raw.token, trace.signature, trace.context, state.comparable_priors())),
        )
        if raw.origin is not None:  # a restored function called before the monitor met it
            explanation = framework_cause(raw.origin, explanation)
        state.begun += 1
        event = TraceEvent(
            index=state.begun,
            cause=explanation.cause,
            seconds=0.0,
            time=0.0,
            call_site=None,
            signature=trace.signature,
            changes=explanation.changes,
            object_index=object_index,
            closest=explanation.closest,
            context=trace.context,
            note=NOTE,
            nested=False,
            expected=expected_by_default(explanation),
            earlier=True,
        )
        state.earlier += 1
        state.record(event, Prior(event.index, raw.token, trace.signature, trace.context, trace.object_refs))
    if traces:
        state.after_earlier = True
    return len(traces)


def _saved_earlier(context: tuple[tuple[str, str], ...], explanation: Explanation) -> Explanation:
    # A trace made by tf.saved_model.save carries the save's variable policy in its context (the
    # key that made the save trace again); live traces in a save are recognised by the save
    # context itself. Read from the cache, it is the same expected serialization trace.
    if explanation.cause == "first-trace" or dict(context).get("variable_policy", "None") == "None":
        return explanation
    return replace(explanation, cause="saved-model-export")

