"""The planner's side of the safety classes: each candidate classed, and which maker's phase may take it."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.candidate import Candidate, FunctionContext
from tfretrace.fix.core.safety import SAFE, classify

# The planner's phases, in order: what `fix --apply` writes, what `--unsafe-fixes` adds, what a
# person does. A step's count assumes only the steps before it, so the phases never interleave.
TIER_SAFE = 0
TIER_UNSAFE = 1
TIER_HAND = 2


def classified(ctx: FunctionContext, candidate: Candidate) -> Candidate:
    """The candidate with its class and, when unsafe, the reason (fix.safety)."""
    if candidate.state is None:
        return candidate  # a statement: nothing to class
    node = ctx.definition.node if ctx.definition is not None else None
    random = ctx.random if candidate.edits else None
    safety, reason = classify(candidate.kind, candidate.edits, ctx.reader, names=ctx.names, traced=node, random=random,
                              tf_check=candidate.tf_check, condition=candidate.condition)
    return replace(candidate, safety=safety, unsafe_reason=reason)


def admitted(candidate: Candidate, tier: int) -> bool:
    """Whether a phase may take the candidate: the safe phase only safe edits, the unsafe one any edit."""
    if candidate.state is None:
        return True  # statements are said in any phase
    if tier == TIER_SAFE:
        return bool(candidate.edits) and candidate.safety == SAFE
    if tier == TIER_UNSAFE:
        return bool(candidate.edits)
    return True
