"""One checked fix plan per function: ordered steps, each with the traces it predicts and the seconds it saves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from tfretrace.fix.core.body import random_draw
from tfretrace.fix.core.candidate import Candidate, Edited, FunctionContext, State, Verdict, first_config
from tfretrace.fix.core.predict import calls_of, count, mean_seconds
from tfretrace.fix.core.safety import ADVICE, TF_CHECKED, UNSAFE
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.kinds import CALL_SITE_MAKERS, DROPS_DATA, FINAL_MAKERS, KIND_CHANGES, KINDS, MAKERS, NOTES
from tfretrace.fix.planning.origin_advice import origin_steps
from tfretrace.fix.planning.plan_notes import dropped, unaddressed, unpredictable
from tfretrace.fix.planning.restored import announce_serving, link_restored
from tfretrace.fix.planning.safety_plan import TIER_HAND, TIER_SAFE, TIER_UNSAFE, admitted, after_unsafe, classified
from tfretrace.fix.planning.shared_sites import shared_call_sites
from tfretrace.fix.planning.step import (
    CHANGES_FLOAT_DIGITS,
    CHANGES_RANDOM,
    UNPREDICTED,
    PlanStep,
    applied_count,
    generalizes,
    plan_steps,
    render_counts,
)
from tfretrace.fix.planning.xla_fixes import xla_steps
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport

__all__ = [
    "PlanCache", "PlanStep", "applied_count", "plan_for", "plan_steps", "predict_applied", "render_counts",
    "saved_prediction",
    "with_plan",
]


class Probe(Protocol):
    """TensorFlow, asked about a function of the run once the program has finished (runtime.probe)."""

    def __call__(self, report: FunctionReport, signature: str, alias: str, edited: Edited | None = None) -> str | None:
        """Traces it with a signature text (the file's tensorflow alias given): None where its outputs
        match the run's traces, else why not. ``edited``: the def as earlier steps edit it (fix.core.tensor_body's
        ``edited_def``), traced in its place and run against the run's traces."""

    def argument(
        self, report: FunctionReport, param: str, dtypes: tuple[str, ...], edited: Edited | None = None
    ) -> Verdict:
        """Traces it with the Python value ``param`` a scalar tensor: the first of ``dtypes`` that traces as
        the run did, else None and what TensorFlow said (None, None where it could not be asked), and
        where the graph depends on the value (None: only as data), and on how many inputs TensorFlow ran both.
        ``edited``: the def as the step edits it, traced in its place and always run against the run's traces."""

    def zeros(self, report: FunctionReport, param: str, shape: tuple[int, ...], dtype: str) -> tuple[int, str | None]:
        """Runs each recorded trace that got None for ``param`` beside the trace with a zero tensor of ``shape`` and
        ``dtype`` there: on how many inputs both computed the same, and why not (``(0, None)``: not asked)."""

    def relaxed(self, report: FunctionReport, opened: dict[str, tuple[int | None, ...]]) -> str | None:
        """Traces each recorded call again with the tensor parameters ``opened`` of those shapes (reduce_retracing's
        relaxed trace, Python values as recorded), and runs both: None where they agree, else why not."""

    def one_object(self, report: FunctionReport) -> str | None:
        """Traces every recorded call of every tf.function object the run made of a nested def with one fresh
        function of the first object's Python function (its closure), and runs both: None where all agree."""

    def as_tuple(self, report: FunctionReport, param: str) -> tuple[int, str | None]:
        """Runs each recorded trace that got a list for ``param`` beside the trace with its elements as a tuple: on
        how many inputs both computed the same, and why not (``(0, None)``: no live function to ask)."""

    def unseeded(self, report: FunctionReport) -> str | None:
        """The random op the run's traces drew from with no seed (TensorFlow's state), or None where seeded."""

    def random(self, report: FunctionReport) -> str | None:
        """The first stateful random op in the run's traces, seeded or not (TensorFlow's graphs), or None."""


def plan_for(
    report: FunctionReport,
    reader: SourceReader | None = None,
    *,
    applied_only: bool = False,
    probe: Probe | None = None,
) -> tuple[PlanStep, ...]:
    """The ranked, checked plan for one function; empty when nothing retraced or nothing can be predicted.

    ``applied_only`` keeps only the steps ``tfretrace fix --apply`` makes, ``--unsafe-fixes`` or not
    (those with edits): what the program traces once the mechanical edits are applied and the
    advice is not.
    """
    if report.retraces == 0:
        return ()
    reader = reader or SourceReader()
    advice = origin_steps(report, reader)
    if advice is not None:
        return tuple(advice)
    short = report.name.rsplit(".", 1)[-1]
    definition = reader.function_at(report.location, short) if report.keras is None else None
    ctx = FunctionContext(report, reader, definition, short)
    if probe is not None:
        # A body no step edits is asked as before (a probe given no ``edited``).
        ctx.probe = lambda signature, edited=None: (
            probe(report, signature, ctx.tf) if edited is None else probe(report, signature, ctx.tf, edited)
        )
        ctx.probe_argument = lambda param, dtypes, edited=None: (
            probe.argument(report, param, dtypes) if edited is None else probe.argument(report, param, dtypes, edited)
        )
        ctx.probe_seed = lambda: probe.unseeded(report)
        ctx.probe_relaxed = lambda opened: probe.relaxed(report, opened)
        ctx.probe_as_tuple = lambda param: probe.as_tuple(report, param)
        ctx.probe_one_object = lambda: probe.one_object(report)
        ctx.probe_zeros = lambda param, shape, dtype: probe.zeros(report, param, shape, dtype)
    replay = calls_of(report)
    state = State(replay, first_config(report, definition))
    recorded = len(report.events)
    baseline = count(replay, state.config)
    if baseline != recorded:
        # The replay does not reproduce what TensorFlow did: predictions would be guesses.
        return (unpredictable(report, baseline, recorded),)
    per_trace = mean_seconds(replay)
    steps: list[PlanStep] = []
    statements: list[PlanStep] = []
    said: set[tuple[str, str]] = set()
    # First what tfretrace fix --apply makes (safe steps with edits), then what --unsafe-fixes
    # adds, then what a person adds by hand: the count after the first part is what --apply
    # delivers, after the second what --unsafe-fixes delivers, after all three the minimum.
    ctx.random = random_draw(definition.node) if definition is not None and definition.node is not None else None
    if ctx.random is None and probe is not None:
        # A draw the def's source does not show (a called model's layer, a helper): TensorFlow's graphs do.
        ctx.random = probe.random(report)
    if ctx.random is None:
        # The graphs as each trace was made: the only record of a function gone by the end of the run (a def
        # nested in a function that returned), and of a session planned again without TensorFlow.
        ctx.random = report.draw
    current = baseline
    for tier in (TIER_SAFE, TIER_UNSAFE, TIER_HAND)[: 2 if applied_only else 3]:
        state, current, _ = _phase(ctx, state, current, per_trace, steps, statements, said, tier=tier)
    steps = after_unsafe(steps)
    if report.dropped_events and steps:
        statements.append(dropped(report))
    statements.extend(unaddressed(report, steps, statements, current))
    return tuple([_with_changes(ctx, step) for step in steps] + statements)


FLOAT_DIGITS_NOTE = "; floats may differ in the last digits (shape-generic kernels, no constant folding)"


def _with_changes(ctx: FunctionContext, step: PlanStep) -> PlanStep:
    """The step with what it changes in the results besides the count (the field, and a sentence)."""
    if step.kind in KIND_CHANGES:  # what the kind changes whatever the body (its Kind's ``changes``)
        return replace(step, changes=KIND_CHANGES[step.kind])
    if step.changes is not None:  # its maker said, from what TensorFlow showed (keras-call)
        return announce_serving(ctx.report, step)
    draw = ctx.random if step.traces_after < step.traces_before else None
    if draw is None:
        if generalizes(step.kind, step.cause):
            # Issue 33: a generalized signature moved a printed float in its 5th decimal, unsaid.
            note = NOTES.get(step.kind, FLOAT_DIGITS_NOTE)
            step = replace(step, changes=CHANGES_FLOAT_DIGITS, summary=step.summary + note)
        return announce_serving(ctx.report, step)
    # Seen on tensorflow/docs DCGAN: after an input_signature the generated images' mean moved in
    # the 4th digit, because the partial batch's own trace no longer had its own noise stream.
    said = f"; the body draws random numbers ({draw}): fewer traces draw other numbers than this run did"
    if ctx.unseeded is not None:
        # Issue 38: why such a step may be safe (fix.planning.safety_plan's ``unseeded``).
        said += f", in a run that fixed no seed ({ctx.unseeded} unseeded): no run could repeat them"
    return announce_serving(ctx.report, replace(step, changes=CHANGES_RANDOM, summary=step.summary + said))


def _phase(
    ctx: FunctionContext,
    state: State,
    current: int,
    per_trace: float,
    steps: list[PlanStep],
    statements: list[PlanStep],
    said: set[tuple[str, str]],
    *,
    tier: int,
) -> tuple[State, int, bool]:
    """One phase's steps: the greedy ones and a declaration, or the declaration alone where it reaches as low.

    A signature that covers a Python number reaches, in one edit of the decorator, the count that
    passing the number as a tensor at every call site and then declaring reaches in two.
    """
    begin = len(steps)
    found = _greedy(ctx, state, current, per_trace, steps, statements, said, tier=tier)
    if len(steps) - begin < 2:
        return found
    # Asked only where the greedy path took two steps or more: each declaration is a TensorFlow probe.
    direct = _final(ctx, state, current, tier)
    if direct is None or direct[0] > found[1]:
        return found
    del steps[begin:]
    after, chosen = direct
    steps.append(_step(_by_hand(chosen, tier != TIER_HAND), current, after, per_trace))
    assert chosen.state is not None
    return chosen.state, after, True


def _greedy(
    ctx: FunctionContext,
    state: State,
    current: int,
    per_trace: float,
    steps: list[PlanStep],
    statements: list[PlanStep],
    said: set[tuple[str, str]],
    *,
    tier: int,
) -> tuple[State, int, bool]:
    """Greedy steps of one kind of maker, then the final declaration: the state, count, and whether one was made.

    ``tier``: TIER_SAFE, only safe candidates with edits; TIER_UNSAFE, any candidate with edits;
    TIER_HAND, any candidate, its edits dropped (a step that only helps after a step by hand is
    made by hand too, or ``--apply`` would not do what its first count says).
    """
    report = ctx.report
    by_tool = tier != TIER_HAND
    for _ in range(8):
        best: tuple[int, Candidate] | None = None
        for candidate in _candidates(ctx, state, tier):
            if candidate.state is None:
                if (candidate.kind, candidate.summary) not in said:
                    said.add((candidate.kind, candidate.summary))
                    cost = f"; one trace of {report.display_name()} takes about {per_trace * 1000:.1f} ms"
                    said_step = replace(candidate, summary=candidate.summary + cost)
                    statements.append(_step(said_step, current, current, per_trace))
                continue
            after = count(candidate.state.replay, candidate.state.config)
            if after is None or after >= current:
                continue  # a fix predicted to remove nothing is not offered
            # A fix that changes what is computed (drop_remainder skips examples): only where no declaration
            # from the same calls removes as many traces.
            if candidate.kind in DROPS_DATA and _declared_now(ctx, state, current, tier, after):
                continue  # the declaration removes as many traces and keeps every example
            if best is None or after < best[0]:
                best = (after, candidate)
        if best is None:
            break
        after, chosen = best
        steps.append(_step(_by_hand(chosen, by_tool), current, after, per_trace))
        assert chosen.state is not None
        state, current = chosen.state, after
    # The second phase declares again only where its steps let a declaration remove more (an
    # input_signature by hand after tfretrace's reduce_retracing).
    final = _final(ctx, state, current, tier)
    if final is None:
        # A step that removes nothing alone but lets one declaration cover every call (a list
        # stacked into one tensor whose length the signature then leaves open).
        enabling = _enabling(ctx, state, current, tier)
        if enabling is not None:
            candidate, final = enabling
            note = " (removes nothing alone; the last step needs it)"
            enabled = _by_hand(replace(candidate, summary=candidate.summary + note), by_tool)
            steps.append(_step(enabled, current, current, per_trace))
            assert candidate.state is not None
            state = candidate.state
    if final is None:
        return state, current, False
    after, chosen = final
    steps.append(_step(_by_hand(chosen, by_tool), current, after, per_trace))
    assert chosen.state is not None
    return chosen.state, after, True


def _declared_now(ctx: FunctionContext, state: State, current: int, tier: int, after: int) -> bool:
    final = _final(ctx, state, current, tier)
    return final is not None and final[0] <= after


def _by_hand(candidate: Candidate, by_tool: bool) -> Candidate:
    # Past the tool's phases nothing is edited: the step relies on a step made by hand.
    if by_tool or not candidate.edits:
        return candidate
    return replace(candidate, edits=(), summary=candidate.summary + " (by hand: its count assumes the steps before it)",
                   safety=ADVICE, unsafe_reason=None)


def _candidates(ctx: FunctionContext, state: State, tier: int) -> list[Candidate]:
    out: list[Candidate] = []
    for kind in MAKERS:
        found = kind(ctx, state)
        made = found if isinstance(found, list) else [] if found is None else [found]
        if kind in CALL_SITE_MAKERS and ctx.report.concrete_python_sites:
            made = [_unseen_path(ctx, c) for c in made]
        out.extend(made)
    return [c for c in (classified(ctx, c) for c in out) if admitted(c, tier)]


def _unseen_path(ctx: FunctionContext, candidate: Candidate) -> Candidate:
    """A call-site edit where get_concrete_function also passes Python values: said, not counted."""
    if candidate.state is None:
        return candidate
    sites = ", ".join(ctx.report.concrete_python_sites[:3])
    return Candidate(
        candidate.cause, "statement",
        f"{candidate.summary} would change the calls only: get_concrete_function at {sites} passes Python "
        "values too, and those calls would then trace on their own, which this run cannot count",
        None,
    )


def _enabling(
    ctx: FunctionContext, state: State, current: int, tier: int
) -> tuple[Candidate, tuple[int, Candidate]] | None:
    best: tuple[Candidate, tuple[int, Candidate]] | None = None
    for candidate in _candidates(ctx, state, tier):
        if candidate.state is None or count(candidate.state.replay, candidate.state.config) != current:
            continue
        final = _final(ctx, candidate.state, current, tier)
        if final is not None and (best is None or final[0] < best[1][0]):
            best = (candidate, final)
    return best


def _final(ctx: FunctionContext, state: State, current: int, tier: int) -> tuple[int, Candidate] | None:
    # The last step: one declaration covering every call; reduce_retracing where none can be written.
    for make in FINAL_MAKERS:
        candidate = make(ctx, state)
        if candidate is None or candidate.state is None:
            continue
        candidate = classified(ctx, candidate)
        if not admitted(candidate, tier) or candidate.state is None:
            continue
        after = count(candidate.state.replay, candidate.state.config)
        if after is not None and after < current:
            if state.signature_advice and candidate.edits:
                note = " (after the advice above: it assumes the calls pass what that advice says)"
                candidate = replace(candidate, edits=(), summary=candidate.summary + note, safety=ADVICE,
                                    unsafe_reason=None)
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
        pinned=candidate.pinned,
        python_use=candidate.python_use,
        safety=candidate.safety if candidate.safety is not None else (ADVICE if candidate.state is not None else None),
        unsafe_reason=candidate.unsafe_reason,
        checked=TF_CHECKED if candidate.tf_check == TF_CHECKED else None,
        checked_inputs=candidate.compared or None,
        unasked=_unasked(candidate),
        refused=candidate.refused,
        changes=candidate.changes,
    )


def _unasked(candidate: Candidate) -> bool:
    """An unsafe edit of a kind TensorFlow checks, made with no answer from it (no probe, no live function)."""
    found = KINDS.get(candidate.kind)
    askable = found is not None and (found.probed or found.value_checked)
    return askable and bool(candidate.edits) and candidate.safety == UNSAFE and candidate.tf_check is None


def with_plan(report: FunctionReport, reader: SourceReader | None = None, probe: Probe | None = None) -> FunctionReport:
    """The report with its plan, and each retrace's ``fix`` taken from the checked step for its cause."""
    reader = reader or SourceReader()
    steps = (*plan_for(report, reader, probe=probe), *xla_steps(report, reader))
    fixes: dict[str, str] = {}
    for step in steps:
        if step.code and step.kind != "statement" and step.traces_after < step.traces_before:
            fixes.setdefault(step.cause, step.code)
    events = tuple(
        replace(e, fix=fixes.get(e.cause) if e.is_retrace else None) for e in report.events
    )
    counts = (applied_count(steps), applied_count(steps, unsafe=True)) if steps else None
    return replace(report, plan=tuple(s.to_dict() for s in steps), events=events, fix_counts=counts)


def predict_applied(report: FunctionReport, reader: SourceReader | None = None, *, unsafe: bool = False) -> int | None:
    """Traces predicted once every mechanical edit of the plan is applied (steps by hand left undone).

    None when the replay cannot predict this function. This is the number ``tfretrace fix
    --apply`` should measure for the calls this run made: the plan's ``tfretrace`` steps come
    first, so it is also the first number of the plan's headline.
    """
    steps = plan_for(report, reader, applied_only=True)
    if not steps and report.retraces == 0:
        return report.traces
    if any(s.open in UNPREDICTED for s in steps):
        return None
    found = applied_count(steps, unsafe=unsafe)
    return len(report.events) if found is None else found


def saved_prediction(
    report: FunctionReport, reader: SourceReader | None = None, *, unsafe: bool = False
) -> int | None:
    """What ``tfretrace fix --apply`` (``unsafe``: with ``--unsafe-fixes``) is predicted to leave.

    The saved plan's own count, else a new plan's. The saved plan knows what a session-wide pass
    added (a restored function's count through the saving function's step); a session saved
    without a plan is planned now, applied edits only.
    """
    saved = applied_count(plan_steps(report), unsafe=unsafe)
    return saved if saved is not None else predict_applied(report, reader, unsafe=unsafe)


class PlanCache:
    """Plans for a live monitor's sessions: made once per function and trace count, never fatal."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str, str], tuple[tuple[int, int, bool], FunctionReport]] = {}

    def planned(
        self, functions: tuple[FunctionReport, ...], on_error: Callable[[BaseException], None],
        probe: Probe | None = None,
    ) -> tuple[FunctionReport, ...]:
        """Each report with its plan; an error inside planning is reported and the report kept plain.

        ``probe``: TensorFlow traces a generalized signature (given once the program has finished).
        """
        # Plans read the user's source and replay every recorded call, so they are cached; the
        # source is read once per session() call.
        reader = SourceReader()
        out = []
        for report in functions:
            key = (report.name, report.location, report.display_name())
            known = self._known.get(key)
            if known is not None and known[0] == (report.traces, report.xla_compiles, probe is not None):
                out.append(replace(report, plan=known[1].plan, events=known[1].events, fix_counts=known[1].fix_counts))
                continue
            try:
                planned = with_plan(report, reader, probe)
            except Exception as exc:
                on_error(exc)
                planned = report
            self._known[key] = ((report.traces, report.xla_compiles, probe is not None), planned)
            out.append(planned)
        try:
            return shared_call_sites(link_restored(tuple(out)), reader)
        except Exception as exc:
            on_error(exc)
            return tuple(out)


def fix_for(report: FunctionReport, event: TraceEvent, reader: SourceReader | None = None) -> str | None:
    """The checked fix for a trace about to happen (budgets): the plan over the history and this call."""
    history = (*(e for e in report.events if e.index != event.index), event)
    planned = with_plan(replace(report, events=history, traces=len(history)), reader)
    return planned.events[-1].fix
