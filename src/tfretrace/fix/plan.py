"""One checked fix plan per function: ordered steps, each with the traces it predicts and the seconds it saves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tfretrace.events import FunctionReport, TraceEvent
from tfretrace.fix import callsite, declare, keras_fixes
from tfretrace.fix.candidate import Candidate, FunctionContext, State, first_config
from tfretrace.fix.origin_advice import origin_steps
from tfretrace.fix.predict import calls_of, count, mean_seconds
from tfretrace.fix.source import Replacement, SourceReader
from tfretrace.fix.xla_fixes import xla_steps

_UNPREDICTABLE = "no fix is predicted"

# Fix kinds tried at every step, each for one root cause.
_KINDS: tuple[Callable[[FunctionContext, State], Any], ...] = (
    callsite.python_numbers,
    callsite.dtypes,
    callsite.none_to_zeros,
    callsite.lists,
    callsite.dict_keys,
    callsite.read_only_variables,
    declare.drop_remainder,
    declare.one_object,
    declare.same_object,
    keras_fixes.predict_buckets,
)


@dataclass(frozen=True)
class PlanStep:
    """One step of a fix plan: a fix for one root cause and what it is predicted to leave.

    ``traces_before``/``traces_after`` count the traces of the calls this run made, before and
    after this step (the steps before it applied); ``verified`` is the count measured after
    applying the edits, or None. A ``statement`` step (kind) changes nothing and says why.
    """

    cause: str
    kind: str
    summary: str
    code: str | None
    edits: tuple[Replacement, ...]
    traces_before: int
    traces_after: int
    seconds_saved: float
    verified: int | None = None
    final: bool = False
    # XLA steps (kind xla-*): compiles of the recorded calls before and after; traces unchanged.
    compiles_before: int | None = None
    compiles_after: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (schema 1, additive)."""
        out = self._fields()
        if self.compiles_before is not None:
            out["compiles_before"] = self.compiles_before
            out["compiles_after"] = self.compiles_after
        return out

    def _fields(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "kind": self.kind,
            "summary": self.summary,
            "code": self.code,
            "edits": [_edit_dict(e) for e in self.edits],
            "traces_before": self.traces_before,
            "traces_after": self.traces_after,
            "seconds_saved": round(self.seconds_saved, 6),
            "verified": self.verified,
            "final": self.final,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanStep:
        """Inverse of :meth:`to_dict`."""
        from tfretrace.fix.source import Span

        edits = tuple(
            Replacement(Span(e["path"], e["line"], e["col"], e["end_line"], e["end_col"]), e["text"])
            for e in data.get("edits", [])
        )
        return cls(
            cause=str(data["cause"]),
            kind=str(data.get("kind", "")),
            summary=str(data["summary"]),
            code=data.get("code"),
            edits=edits,
            traces_before=int(data["traces_before"]),
            traces_after=int(data["traces_after"]),
            seconds_saved=float(data.get("seconds_saved", 0.0)),
            verified=data.get("verified"),
            final=bool(data.get("final", False)),
            compiles_before=None if data.get("compiles_before") is None else int(data["compiles_before"]),
            compiles_after=None if data.get("compiles_after") is None else int(data["compiles_after"]),
        )


def _edit_dict(edit: Replacement) -> dict[str, Any]:
    s = edit.span
    return {
        "path": s.path,
        "line": s.line,
        "col": s.col,
        "end_line": s.end_line,
        "end_col": s.end_col,
        "text": edit.text,
    }


def plan_for(
    report: FunctionReport, reader: SourceReader | None = None, *, applied_only: bool = False
) -> tuple[PlanStep, ...]:
    """The ranked, checked plan for one function; empty when nothing retraced or nothing can be predicted.

    ``applied_only`` keeps only the steps ``tfretrace fix --apply`` makes (those with edits): what
    the program traces once the mechanical edits are applied and the advice is not.
    """
    if report.retraces == 0:
        return ()
    advice = origin_steps(report)
    if advice is not None:
        return tuple(_origin_step(step, report.traces) for step in advice)
    reader = reader or SourceReader()
    short = report.name.rsplit(".", 1)[-1]
    definition = reader.function_at(report.location, short) if report.keras is None else None
    ctx = FunctionContext(report, reader, definition, short)
    replay = calls_of(report)
    state = State(replay, first_config(report, definition))
    recorded = len(report.events)
    baseline = count(replay, state.config)
    if baseline != recorded:
        # The replay does not reproduce what TensorFlow did: predictions would be guesses.
        return (_unpredictable(report, baseline, recorded),)
    per_trace = mean_seconds(replay)
    steps: list[PlanStep] = []
    statements: list[PlanStep] = []
    current = baseline
    used: set[tuple[str, str]] = set()
    for _ in range(8):
        best: tuple[int, Candidate] | None = None
        for candidate in _candidates(ctx, state, applied_only):
            if candidate.state is None:
                if (candidate.kind, candidate.summary) not in used:
                    used.add((candidate.kind, candidate.summary))
                    cost = f"; one trace of {report.display_name()} takes about {per_trace * 1000:.1f} ms"
                    said = replace(candidate, summary=candidate.summary + cost)
                    statements.append(_step(said, current, current, per_trace))
                continue
            after = count(candidate.state.replay, candidate.state.config)
            if after is None or after >= current:
                continue  # a fix predicted to remove nothing is not offered
            if best is None or after < best[0]:
                best = (after, candidate)
        if best is None:
            break
        after, chosen = best
        steps.append(_step(chosen, current, after, per_trace))
        assert chosen.state is not None
        state, current = chosen.state, after
    final = _final(ctx, state, current, applied_only)
    if final is None:
        # A step that removes nothing alone but lets one declaration cover every call (a list
        # stacked into one tensor whose length the signature then leaves open).
        enabling = _enabling(ctx, state, current, applied_only)
        if enabling is not None:
            candidate, final = enabling
            note = " (removes nothing alone; the last step needs it)"
            steps.append(_step(replace(candidate, summary=candidate.summary + note), current, current, per_trace))
            assert candidate.state is not None
            state = candidate.state
    if final is not None:
        after, chosen = final
        steps.append(_step(chosen, current, after, per_trace))
    if report.dropped_events and steps:
        statements.append(_dropped(report))
    statements.extend(_unaddressed(report, steps, statements, current))
    return tuple(steps + statements)


def _origin_step(step: dict[str, object], traces: int) -> PlanStep:
    # Advice for TensorFlow's own code traced for the user's call: a statement, nothing predicted.
    return PlanStep(
        cause=str(step["cause"]),
        kind="statement",
        summary=str(step["summary"]),
        code=None if step["code"] is None else str(step["code"]),
        edits=(),
        traces_before=traces,
        traces_after=traces,
        seconds_saved=0.0,
    )


def _unaddressed(report: FunctionReport, steps: list[PlanStep], said: list[PlanStep], left: int) -> list[PlanStep]:
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
        )
        for cause, n in sorted(counts.items())
    ]


def _candidates(ctx: FunctionContext, state: State, applied_only: bool = False) -> list[Candidate]:
    out: list[Candidate] = []
    for kind in _KINDS:
        found = kind(ctx, state)
        if isinstance(found, list):
            out.extend(found)
        elif found is not None:
            out.append(found)
    if applied_only:
        out = [c for c in out if c.edits]
    return out


def _enabling(
    ctx: FunctionContext, state: State, current: int, applied_only: bool
) -> tuple[Candidate, tuple[int, Candidate]] | None:
    best: tuple[Candidate, tuple[int, Candidate]] | None = None
    for candidate in _candidates(ctx, state, applied_only):
        if candidate.state is None or count(candidate.state.replay, candidate.state.config) != current:
            continue
        final = _final(ctx, candidate.state, current, applied_only)
        if final is not None and (best is None or final[0] < best[1][0]):
            best = (candidate, final)
    return best


def _final(ctx: FunctionContext, state: State, current: int, applied_only: bool) -> tuple[int, Candidate] | None:
    # The last step: one declaration covering every call; reduce_retracing where none can be written.
    for make in (declare.element_spec, declare.final_signature, declare.reduce_retracing):
        candidate = make(ctx, state)
        if candidate is None or candidate.state is None or (applied_only and not candidate.edits):
            continue
        after = count(candidate.state.replay, candidate.state.config)
        if after is not None and after < current:
            if state.signature_advice and candidate.edits:
                note = " (after the advice above: it assumes the calls pass what that advice says)"
                candidate = replace(candidate, edits=(), summary=candidate.summary + note)
            return after, replace(candidate, final=True)
    return None


def _step(candidate: Candidate, before: int, after: int, per_trace: float) -> PlanStep:
    return PlanStep(
        cause=candidate.cause,
        kind=candidate.kind,
        summary=candidate.summary,
        code=candidate.code,
        edits=candidate.edits,
        traces_before=before,
        traces_after=after,
        seconds_saved=(before - after) * per_trace,
        final=candidate.final,
    )


def _unpredictable(report: FunctionReport, baseline: int | None, recorded: int) -> PlanStep:
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
    )


def with_plan(report: FunctionReport, reader: SourceReader | None = None) -> FunctionReport:
    """The report with its plan, and each retrace's ``fix`` taken from the checked step for its cause."""
    steps = (*plan_for(report, reader), *xla_steps(report, PlanStep))
    fixes: dict[str, str] = {}
    for step in steps:
        if step.code and step.kind != "statement" and step.traces_after < step.traces_before:
            fixes.setdefault(step.cause, step.code)
    events = tuple(
        replace(e, fix=fixes.get(e.cause) if e.is_retrace else None) for e in report.events
    )
    return replace(report, plan=tuple(s.to_dict() for s in steps), events=events)


def predict_applied(report: FunctionReport, reader: SourceReader | None = None) -> int | None:
    """Traces predicted once every mechanical edit of the plan is applied (advice left undone).

    None when the replay cannot predict this function. This is the number ``tfretrace fix
    --apply`` should measure for the calls this run made.
    """
    steps = plan_for(report, reader, applied_only=True)
    if not steps and report.retraces == 0:
        return report.traces
    if any(s.kind == "statement" and s.summary.startswith(_UNPREDICTABLE) for s in steps):
        return None
    changing = [s for s in steps if s.traces_after < s.traces_before]
    return changing[-1].traces_after if changing else len(report.events)


class PlanCache:
    """Plans for a live monitor's sessions: made once per function and trace count, never fatal."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str, str], tuple[tuple[int, int], FunctionReport]] = {}

    def planned(
        self, functions: tuple[FunctionReport, ...], on_error: Callable[[BaseException], None]
    ) -> tuple[FunctionReport, ...]:
        """Each report with its plan; an error inside planning is reported and the report kept plain."""
        # Plans read the user's source and replay every recorded call, so they are cached; the
        # source is read once per session() call.
        reader = SourceReader()
        out = []
        for report in functions:
            key = (report.name, report.location, report.display_name())
            known = self._known.get(key)
            if known is not None and known[0] == (report.traces, report.xla_compiles):
                out.append(replace(report, plan=known[1].plan, events=known[1].events))
                continue
            try:
                planned = with_plan(report, reader)
            except Exception as exc:
                on_error(exc)
                planned = report
            self._known[key] = ((report.traces, report.xla_compiles), planned)
            out.append(planned)
        return tuple(out)


def plan_steps(report: FunctionReport) -> list[PlanStep]:
    """The function's saved plan as records; a malformed step (a foreign or hostile file) is left out."""
    steps = []
    for data in report.plan:
        try:
            steps.append(PlanStep.from_dict(data))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return steps


def fix_for(report: FunctionReport, event: TraceEvent, reader: SourceReader | None = None) -> str | None:
    """The checked fix for a trace about to happen (budgets): the plan over the history and this call."""
    history = (*(e for e in report.events if e.index != event.index), event)
    planned = with_plan(replace(report, events=history, traces=len(history)), reader)
    return planned.events[-1].fix


def _dropped(report: FunctionReport) -> PlanStep:
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


def render_counts(steps: tuple[PlanStep, ...]) -> str:
    """``24 traces -> 3 -> 1`` for the steps that change the count."""
    changing = [s for s in steps if s.traces_after < s.traces_before]
    if not changing:
        return ""
    return f"{changing[0].traces_before} traces -> " + " -> ".join(str(s.traces_after) for s in changing)

