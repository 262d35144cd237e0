"""The planner's side of the safety classes: the check that decides a step's class, and which phase may take it.

Each kind declares its class in its module (fix.kinds, the table ``fix.kinds.KINDS``); here a
candidate gets its class from that declaration, what TensorFlow said of it, a random draw in its
body, and, for a move, the conditions of fix.core.move_checks and of its kind's module.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core import move_checks
from tfretrace.fix.core.body import host_draw, random_draw, trace_time_effect
from tfretrace.fix.core.candidate import Candidate, FunctionContext
from tfretrace.fix.core.kind import MoveSite
from tfretrace.fix.core.safety import ADVICE, SAFE, UNSAFE
from tfretrace.fix.core.source import Replacement, SourceReader
from tfretrace.fix.kinds import BY_NAME, KINDS, THROUGH_ANOTHER, kind_floor
from tfretrace.fix.planning.step import PlanStep

# The planner's phases, in order: what `fix --apply` writes, what `--unsafe-fixes` adds, what a
# person does. A step's count assumes only the steps before it, so the phases never interleave.
TIER_SAFE = 0
TIER_UNSAFE = 1
TIER_HAND = 2


def classified(ctx: FunctionContext, candidate: Candidate) -> Candidate:
    """The candidate with its class and, when unsafe, the reason (this module's classify)."""
    if candidate.state is None:
        return candidate  # a statement: nothing to class
    node = ctx.definition.node if ctx.definition is not None else None
    random = ctx.random if candidate.edits else None
    if random is not None and unseeded(ctx) is not None:
        random = None  # a run that fixed no seed had no stream to keep: announced as random-stream
    safety, reason = classify(candidate.kind, candidate.edits, ctx.reader, names=ctx.names, traced=node, random=random,
                              tf_check=candidate.tf_check, condition=candidate.condition)
    effect = trace_time_effect(node) if candidate.edits and node is not None and safety == SAFE else None
    if effect is not None:
        # The body's Python runs once per trace: a step that removes traces prints less (a "tracing" line)
        # or appends less to the program's list, which no output comparison of TensorFlow's can see.
        safety, reason = UNSAFE, f"the body's Python runs at each trace ({effect}): fewer traces run it fewer times"
    merged = _merges_variable_makers(candidate) if candidate.edits else None
    if merged is not None:
        # Not an unsafe edit but a broken one, whatever the phase: by hand, saying why.
        return replace(candidate, edits=(), safety=ADVICE, unsafe_reason=None,
                       summary=f"{candidate.summary} (by hand: {merged})")
    return replace(candidate, safety=safety, unsafe_reason=reason)


def _merges_variable_makers(candidate: Candidate) -> str | None:
    """Why a step that leaves fewer tf.function objects than made variables at their first call fails, or None.

    Each such object created variables of its own on its first call (a model or an optimizer made per run):
    one object serving them all would have to create variables again on a later trace, which TensorFlow
    refuses (``tf.function only supports singleton tf.Variables created on the first call``), or, where no
    later call traces, would keep using the first run's variables.
    """
    assert candidate.state is not None
    replay = candidate.state.replay
    objects = len({call.obj for call in replay.calls}) or 1
    if replay.variable_traces < 2 or objects >= replay.variable_traces:
        return None
    return (f"{replay.variable_traces} tf.function objects each created variables at their first call; "
            f"{objects} left would have to create them again on a later trace, which TensorFlow refuses")


def unseeded(ctx: FunctionContext) -> str | None:
    """The random op the run drew from with no seed, as TensorFlow kept it; None where seeded or not asked.

    Asked once per function, after the run (runtime.probe): a saved session without TensorFlow
    keeps such a body's steps unsafe.
    """
    if ctx.probe_seed is not None:
        node = ctx.definition.node if ctx.definition is not None else None
        # A NumPy or Python draw is seeded outside TensorFlow, where its state cannot be read. A draw
        # only TensorFlow's graphs showed is in code the body calls, which may draw from NumPy too: then
        # the whole file is read for one (a helper in another file is not seen).
        host = host_draw(node) if node is not None else None
        if host is None and node is not None and ctx.definition is not None and random_draw(node) is None:
            found = ctx.reader.module(ctx.definition.path)
            host = "an unread file" if found is None else host_draw(found[1])
        ctx.unseeded = ctx.probe_seed() if node is not None and host is None else None
        ctx.probe_seed = None
    return ctx.unseeded


def admitted(candidate: Candidate, tier: int) -> bool:
    """Whether a phase may take the candidate: the safe phase only safe edits, the unsafe one any edit."""
    if candidate.state is None:
        return True  # statements are said in any phase
    if tier == TIER_SAFE:
        return bool(candidate.edits) and candidate.safety == SAFE
    if tier == TIER_UNSAFE:
        return bool(candidate.edits)
    return True


def classify(
    kind: str,
    edits: tuple[Replacement, ...],
    reader: SourceReader,
    *,
    names: tuple[str, ...] = (),
    traced: ast.FunctionDef | ast.AsyncFunctionDef | None = None,
    random: str | None = None,
    tf_check: str | None = None,
    condition: str | None = None,
) -> tuple[str, str | None]:
    """A step's class and, for an unsafe one, why: ``(safety, unsafe_reason)``.

    ``names``: the names the function is called by (an object made once must only be passed to
    them); ``traced``: the def its traces run; ``random``: a random draw in its body; ``tf_check``:
    what TensorFlow said of a generalized signature (TF_CHECKED, or why it differs); ``condition``:
    for a kind whose maker checks its conditions, why they do not hold (None: they do).
    """
    if not edits and kind not in THROUGH_ANOTHER:
        return ADVICE, None
    floor = kind_floor(kind, tf_check)
    if floor is not None:
        found = KINDS.get(kind)
        if found is not None and found.probed and tf_check:
            return UNSAFE, tf_check  # what TensorFlow said of the generalized signature
        return UNSAFE, floor
    if random is not None:
        return UNSAFE, f"the body draws random numbers ({random}): fewer traces draw other numbers"
    if kind in KINDS and (KINDS[kind].maker_checks or KINDS[kind].value_checked):
        return (SAFE, None) if condition is None else (UNSAFE, condition)
    reason = _move_reason(kind, edits, reader, names, traced)
    return (SAFE, None) if reason is None else (UNSAFE, reason)


def _move_reason(
    kind: str,
    edits: tuple[Replacement, ...],
    reader: SourceReader,
    names: tuple[str, ...],
    traced: ast.FunctionDef | ast.AsyncFunctionDef | None,
) -> str | None:
    # Each kind's own conditions are on its record (fix.kinds): here only the checks moves share.
    record = BY_NAME.get(kind)
    if record is None:  # kind_floor has said so already; never safe by default
        return f"tfretrace has no safety argument for the kind {kind!r}"
    if record.not_a_move or record.safety.probed:
        return None
    if record.whole_conditions is not None:
        return record.whole_conditions(edits, reader)
    found = move_checks.move_scope(reader, edits)
    if found is None:
        return "tfretrace could not find the loop the statement leaves to check it"
    tree, scope, moved = found
    deleted = move_checks.deleted_in(scope, move_checks.names_bound(moved))
    if deleted is not None:
        return deleted
    if record.move_conditions is not None:
        return record.move_conditions(MoveSite(tree, scope, moved, names))
    function = _traced_def(tree, record.moves_def, moved, traced)
    if function is None:
        return "tfretrace could not find the def the moved tf.function traces"
    return move_checks.frozen_reads(tree, function)


def _traced_def(
    tree: ast.Module, moves_def: bool, moved: ast.stmt, traced: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    if moves_def and isinstance(moved, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return moved
    if traced is None:
        return None
    # The def as this module's tree has it (the reader's tree), found by place.
    return next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
         and (n.lineno, n.name) == (traced.lineno, traced.name)),
        None,
    )


def after_unsafe(steps: list[PlanStep]) -> list[PlanStep]:
    """Steps after an unsafe one, unsafe too: each count assumes the steps before it, which ``--apply`` does not make.

    The unsafe phase may take a step TensorFlow checked (a signature declared once a call was cast): it is
    safe given the unsafe step, so it goes with it (``--unsafe-fixes``), never alone with ``--apply``.
    """
    first = next((i for i, s in enumerate(steps) if s.tier == TIER_UNSAFE), None)
    if first is None:
        return steps
    reason = f"it assumes the {steps[first].kind} step before it, which only --unsafe-fixes makes"
    return [replace(s, safety=UNSAFE, unsafe_reason=reason) if i > first and s.tier == TIER_SAFE else s
            for i, s in enumerate(steps)]
