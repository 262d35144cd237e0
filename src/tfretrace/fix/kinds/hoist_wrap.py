"""Fix kind hoist-wrap: ``f_tf = tf.function(f)`` made anew on each pass of a loop, made once before it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.anchor_moves import move
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.hoist import pipeline_edits, wrap_moved
from tfretrace.fix.core.kind import Kind, Row
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement

NAME = "hoist-wrap"


def _wrap_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    # `tf_f = tf.function(f)` inside a loop: the function's own wrapping call, read from the file.
    moved = None if anchors.definition is None else wrap_moved(anchors.reader, anchors.definition)
    if moved is not None:
        yield moved


def candidate(ctx: FunctionContext, site: str, merged: State) -> Candidate | None:
    """The function's ``tf.function(...)`` line at ``site`` made once before the loop that re-created it."""
    once = pipeline_edits(ctx.reader, site)
    if once is None:
        return None
    # `loss_fn = tf.function(compute_loss)` inside a loop: the same object made before it.
    return Candidate(
        "new-function-object",
        NAME,
        f"make the tf.function for {ctx.short} once, before the loop that re-created it at {site}",
        f"# {site}: before the loop\n{once[1].text.rstrip()}",
        once,
        replace(merged, moved=True),  # a later declaration edits the moved line
    )


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the tf.function(f) reads nothing the loop binds; safe only where f's module reads cannot change "
        "between passes (as hoist-def) and the loop never deletes the name",
    ),
    check=move(_wrap_once, "the tf.function(...) made once before its loop"),
    derive=_wrap_once,
    row=Row(
        "safe when checked",
        "`f_tf = tf.function(f)` reads nothing the loop binds; `f`'s module reads cannot change; the loop"
        " never deletes the name",
        "`p01b_wrap_reads_dict.py` (item 1), `p11_del_each_pass.py` (item 11)",
    ),
    position=30,
)
