"""Fix kind hoist-def: a tf.function def made anew by each call of its outer def, moved to module level."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.anchor_moves import move
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.hoist import hoist_edits
from tfretrace.fix.core.kind import Kind, Row
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import DefInfo, Replacement

NAME = "hoist-def"


def hoist_summary(definition: DefInfo) -> str:
    """What the hoist step says."""
    return (
        f"move {definition.name} out of {definition.outer}() to module level: it closes over nothing of "
        f"{definition.outer}(), and each call of {definition.outer}() made a new tf.function at "
        f"{definition.path}:{definition.line}"
    )


def _hoisted_def(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    moved = hoist_edits(anchors.definition, anchors.reader)
    if moved is not None:
        yield moved


def candidate(ctx: FunctionContext, merged: State) -> Candidate | None:
    """The def moved to module level, where each call of its outer def made the tf.function anew."""
    definition = ctx.definition
    moved = hoist_edits(definition, ctx.reader)
    if definition is None or moved is None:
        return None
    code = f"# {definition.path}:{moved[1].span.line}, at module level\n{moved[1].text.rstrip()}"
    # ``hoisted``: later steps are asked of TensorFlow with the def as this step writes it.
    hoisted = replace(merged, moved=True, hoisted=True)
    return Candidate("new-function-object", NAME, hoist_summary(definition), code, moved, hoisted)


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the def closes over nothing of its outer function; safe only where every module name it reads "
        "(and the module defs it calls read) is an import, a def, a class whose attributes are never "
        "assigned, or a constant bound once, the file has no `global`, and no `del` removes it",
    ),
    check=move(_hoisted_def, "the def moved to module level"),
    derive=_hoisted_def,
    moves_def=True,
    row=Row(
        "safe when checked",
        "the def closes over nothing of its outer function; every module name it reads (and the module "
        "defs it calls read) cannot change between passes; no `del` of its name",
        "`p01_def_reads_dict.py` (item 1)",
    ),
    position=20,
)
