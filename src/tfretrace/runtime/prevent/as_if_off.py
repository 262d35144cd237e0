"""A prevented function's record as the same run without prevention would have made it: what its fix plan reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tfretrace.explain.analyzer import Prior, explain
from tfretrace.fix.core.rules import Signature, covers
from tfretrace.records.events import EXPECTED_CAUSES, TraceEvent
from tfretrace.records.function_report import FunctionReport

if TYPE_CHECKING:
    from tfretrace.fix.planning.plan import Probe


def as_if_off(
    report: FunctionReport, objects: Sequence[Sequence[tuple[Signature, str | None]]], creates_variables: bool
) -> FunctionReport:
    """``report`` with the traces its calls make with no warm-up: one per call signature no earlier trace serves.

    ``objects``: per tf.function object, its distinct call signatures in the order they came
    and where each was first called from (prevention watched them). Each trace is explained by
    the analyzer against the earlier ones, as the monitor would have; a function that creates
    variables makes its extra variable-creation trace at its first call. The plan made from this
    record is the plan of the program as written: prevention off, which is what ``fix --apply``
    edits.
    """
    real = [e for e in report.events if not e.earlier]
    base = real[0] if real else None
    context = base.context if base is not None else ()
    site = base.call_site if base is not None else None
    seconds = report.trace_seconds / len(report.events) if report.events else 0.0
    events: list[TraceEvent] = []
    priors: list[Prior] = []
    for number, calls in enumerate(objects, start=1):
        traced: list[Signature] = []
        for signature, where in calls:
            if any(covers(t, signature) for t in traced):
                continue  # served by an earlier concrete trace of this object
            explanation = explain(number, signature, context, priors)
            causes = [explanation.cause]
            if not traced and creates_variables:
                causes.append("variable-creation")
            for cause in causes:
                index = len(events) + 1
                events.append(TraceEvent(
                    index=index, cause=cause, seconds=seconds, time=0.0, call_site=where or site, signature=signature,
                    changes=explanation.changes if cause == explanation.cause else (),
                    closest=explanation.closest if cause == explanation.cause else (),
                    object_index=number, context=context, expected=cause in EXPECTED_CAUSES,
                ))
                priors.append(Prior(index, number, signature, context))
            traced.append(signature)
    return replace(
        report, events=tuple(events), traces=len(events), retrace_count=None, dropped_events=0, plan=(),
        objects=max(report.objects, len(objects)),
    )


def planned_off(
    report: FunctionReport,
    objects: Sequence[Sequence[tuple[Signature, str | None]]] | None,
    creates_variables: bool,
    probe: Probe | None = None,
) -> tuple[tuple[dict[str, object], ...] | None, int | None, int]:
    """The plan of the program as written (None: the record's own), what ``fix --apply`` leaves, the fewest traces.

    ``objects`` None: nothing was warmed, so the run's own record is the program as written.
    ``probe``: TensorFlow, asked as a run without prevention asks it, so that both plan alike.
    """
    from tfretrace.fix.core.source import SourceReader
    from tfretrace.fix.planning.plan import predict_applied, with_plan

    reader = SourceReader()
    if objects is None:
        return None, predict_applied(report, reader), report.traces - report.retraces
    off = as_if_off(report, objects, creates_variables)
    planned = with_plan(off, reader, probe)
    # The plan's own count: its steps were checked with TensorFlow where a probe was given.
    applied = planned.fix_counts[0] if planned.fix_counts is not None else None
    return planned.plan, applied if applied is not None else predict_applied(off, reader), off.traces - off.retraces
