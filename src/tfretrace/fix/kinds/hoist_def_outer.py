"""Fix kind hoist-def-outer: a tf.function def made anew by each call of its outer def, moved into the def around it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.anchor_moves import move
from tfretrace.fix.core.body import trace_time_effect
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.hoist import outer_edits
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.source import Replacement

NAME = "hoist-def-outer"


def _moved(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    moved = outer_edits(anchors.definition, anchors.reader)
    if moved is not None:
        yield moved


def one_object_outer(ctx: FunctionContext, state: State) -> Candidate | None:
    """``def main(): def evaluate(): @tf.function def step(...)``, evaluate() called often: step made once in main.

    The def reads no name of ``evaluate`` (it closes over ``main``'s names, or none), so in ``main`` it
    binds the very cells it bound where it was; what changes is that one object serves every call of
    ``evaluate`` with the traces it has. TensorFlow says whether that holds: once the run is over, one
    fresh function of the first object's Python function (its closure) traces every recorded call of
    every object the outer def made and runs beside each trace on the same inputs; it must also share
    their cells (one call of ``main`` made them all).
    """
    calls = state.replay.calls
    definition = ctx.definition
    if ctx.report.keras is not None or definition is None or len({c.obj for c in calls}) < 2:
        return None
    moved = outer_edits(definition, ctx.reader)
    if moved is None:
        return None
    first = min(c.obj for c in calls)
    merged = state.map_calls({c.index: replace(c, obj=first) for c in calls})
    effect = trace_time_effect(definition.node) if definition.node is not None else None
    if effect is not None:
        # Python that runs per trace (a print, an append to the program's list) would run once instead of
        # once per object: TensorFlow's outputs cannot show it.
        tf_check: str | None = f"the body's Python has an effect at each trace ({effect}): one object runs it once"
    else:
        said = ctx.probe_one_object() if ctx.probe_one_object is not None else None
        tf_check = None if ctx.probe_one_object is None else (TF_CHECKED if said is None else said)
    code = f"# {definition.path}:{moved[1].span.line}, in the function around {definition.outer}()\n{moved[1].text}"
    summary = (
        f"move {definition.name} out of {definition.outer}() into the function around it: it reads no name of "
        f"{definition.outer}(), and each call of {definition.outer}() made a new tf.function at "
        f"{definition.path}:{definition.line}"
    )
    # ``moved``: a later declaration edits the def where this step writes it.
    return Candidate("new-function-object", NAME, summary, code.rstrip(), moved, replace(merged, moved=True),
                     tf_check=tf_check)


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        "one object serves every call of the outer def with the traces it made first: a value the body read "
        "at trace time that changed between those calls (a rebound name, a flag, a list) is no longer read again",
        "TensorFlow, once the run is over: the objects the outer def made close over the same cells, and one fresh "
        "function of the first object's Python function traced every recorded call of every object and ran beside "
        "each trace on the same inputs to the same results",
        probed=True,
    ),
    check=move(_moved, "the def moved into the function around its outer def"),
    derive=_moved,
    moves_def=True,
    row=Row(
        "safe when TensorFlow says so",
        "the def reads no name its outer function binds and at least one of the function around that one, where "
        "it then binds the same cells; its outer def is a statement of that function's own body (not in a loop or "
        "a branch); that function reads the def's name nowhere else; its decorators and defaults read only module "
        "names; no string in it spans lines; its Python has no effect per trace (a print, an append to the "
        "program's list); once the program `tfretrace run` recorded has finished, the objects the run made are "
        "asked: they "
        "share their cells, and one fresh function of the first traces every recorded call of each and runs "
        "beside each trace to the same results. Unsafe where it was not asked (more objects than tfretrace keeps, "
        "a run without `--save`) or a body with an effect outside its outputs (not run): one object serves every "
        "call with the traces it made first, and a value read at trace time that changed between calls is not "
        "read again",
    ),
    position=25,
    makers=(Maker(one_object_outer, 85),),
)
