"""The statements a plan adds: causes no fix addresses, a replay that cannot predict, a dropped history."""

from __future__ import annotations

from tfretrace.fix.planning.step import OPEN_EVENTS_DROPPED, OPEN_NO_CHECKED_FIX, OPEN_REPLAY_DIFFERS, PlanStep
from tfretrace.records.function_report import FunctionReport

_UNPREDICTABLE = "no fix is predicted"  # prose only: code reads the step's ``open``


def unaddressed(report: FunctionReport, steps: list[PlanStep], said: list[PlanStep], left: int) -> list[PlanStep]:
    # Every cause that retraced gets a line: a fix, a statement, or this one saying none is known.
    if steps and left <= min(s.traces_after for s in steps) and steps[-1].final:
        return []
    covered = {s.cause for s in (*steps, *said)}
    counts: dict[str, int] = {}
    for event in report.events:
        if event.is_retrace and event.cause not in covered:
            counts[event.cause] = counts.get(event.cause, 0) + 1
    return [
        PlanStep(
            cause=cause,
            kind="statement",
            summary=f"{n} {cause} retrace(s) have no fix tfretrace can check; see tfretrace explain {cause}",
            code=None,
            edits=(),
            traces_before=left,
            traces_after=left,
            seconds_saved=0.0,
            open=OPEN_NO_CHECKED_FIX,
        )
        for cause, n in sorted(counts.items())
    ]


def unpredictable(report: FunctionReport, baseline: int | None, recorded: int) -> PlanStep:
    why = (
        "events were dropped from the bounded history"
        if report.dropped_events
        else (f"replaying the recorded calls through TensorFlow's rules gives {baseline} traces, not {recorded}")
    )
    return PlanStep(
        cause=report.main_cause or "unexplained",
        kind="statement",
        summary=f"{_UNPREDICTABLE} for {report.display_name()}: {why}",
        code=None,
        edits=(),
        traces_before=report.traces,
        traces_after=report.traces,
        seconds_saved=0.0,
        open=OPEN_EVENTS_DROPPED if report.dropped_events else OPEN_REPLAY_DIFFERS,
    )


def dropped(report: FunctionReport) -> PlanStep:
    kept = len(report.events)
    return PlanStep(
        cause=report.main_cause or "unexplained",
        kind="statement",
        summary=f"the counts are for the {kept} traces kept of {kept + report.dropped_events} "
        "(bounded history): the dropped ones were not checked against this plan",
        code=None,
        edits=(),
        traces_before=kept,
        traces_after=kept,
        seconds_saved=0.0,
    )
