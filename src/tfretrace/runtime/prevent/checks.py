"""The fix planner's body checks applied to a warm-up: what a general trace would break, or change."""

from __future__ import annotations

import ast

from tfretrace.fix.core.body import random_draw, size_reads, trace_time_effect
from tfretrace.fix.core.rules import Signature
from tfretrace.fix.core.specs import is_top
from tfretrace.fix.planning.step import CHANGES_RANDOM
from tfretrace.records.events import TENSOR


def refusal(node: ast.FunctionDef | ast.AsyncFunctionDef | None, signature: Signature) -> str | None:
    """Why ``signature`` must not be warmed for this body, or None when the checks clear it.

    The planner's rule for an input_signature (fix.kinds.input_signature): a dimension left open that the
    body reads as a Python number (``x.shape[0] == 1``, ``x.shape[0] // 2``, ``len(x)``) is None
    in the general trace, which then takes another branch or fails after its trace-time Python
    ran. Neither may happen to the user's program, so such a signature is not warmed. A body
    that cannot be read is not cleared either.
    """
    opened = [leaf for leaf in signature if leaf.kind == TENSOR and is_top(leaf.path) and _open_dims(leaf)]
    if not opened:
        return None
    if node is None:
        return "not warmed: the function's source could not be read to check it under open dimensions"
    for leaf in opened:
        dims, unknown = size_reads(node, leaf.path)
        if leaf.shape is None:
            hit = sorted(dims)
            unknown = unknown or bool(dims)
        else:
            rank = len(leaf.shape)
            hit = sorted(_open_dims(leaf) & {d + rank if d < 0 else d for d in dims})
        if unknown or hit:
            which = f"dim {hit[0]}" if hit else "shape"
            return (
                f"not warmed: the body reads {leaf.path}'s {which} as a Python number and the profile's "
                "calls varied it: a general trace would compute something else or fail"
            )
    return None


# A body whose Python runs at trace time (a print, an append to the program's list): the warmed
# run does it once for the general trace instead of once per shape.
CHANGES_PYTHON = "trace-time-python"


def changes_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """What fewer traces of this body change in the results, each ``code: detail`` (the plan's codes first)."""
    out = []
    draw = random_draw(node)
    if draw is not None:
        out.append(f"{CHANGES_RANDOM}: the body draws random numbers ({draw}); fewer traces draw other numbers "
                   "than a run without prevention")
    effect = trace_time_effect(node)
    if effect is not None:
        out.append(f"{CHANGES_PYTHON}: the body runs {effect} at trace time; it runs once for the general "
                   "trace instead of once per shape")
    return out


def graph_draw_change(draw: str) -> str:
    """``changes_of``'s random-stream entry for a draw TensorFlow's graphs show and the body's source does not."""
    return (f"{CHANGES_RANDOM}: its traces draw random numbers ({draw}, in code the body calls); fewer traces "
            "draw other numbers than a run without prevention")


def _open_dims(leaf: object) -> set[int]:
    shape = getattr(leaf, "shape", ())
    if shape is None:
        return {-1}  # any rank: every dimension open
    return {i for i, d in enumerate(shape) if d is None}
