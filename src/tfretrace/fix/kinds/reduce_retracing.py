"""Fix kind reduce-retracing: ``reduce_retracing=True`` where TensorFlow's generalization removes traces."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.body import reads_static_size
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.declaration import declaration, decorator_edit
from tfretrace.fix.core.kind import PHASE_FINAL, Kind, Maker, Row
from tfretrace.fix.core.rules import fold_all
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.specs import signature_specs
from tfretrace.records.events import TENSOR, TraceRefused

NAME = "reduce-retracing"


def reduce_retracing(ctx: FunctionContext, state: State) -> Candidate | None:
    """reduce_retracing=True, offered only where TF's generalization removes traces."""
    if state.config.reduce_retracing or ctx.report.keras is not None:
        return None
    node = None if ctx.definition is None else ctx.definition.node
    varied = varying_paths(state.replay.calls, TENSOR)
    if node is not None and any(reads_static_size(node, path) for path in varied):
        # Generalized to a None dimension, x.shape[0] is None and len(x) fails in the new trace.
        return None
    code, edits = decorator_edit(ctx, "reduce_retracing=True", state)
    refused = _relaxed_refused(ctx, state)
    if refused is not None:
        # TensorFlow raised tracing the relaxed signature it would trace: the edited program would fail there.
        edits = ()
    return Candidate(
        "shape-changed",
        NAME,
        "let TensorFlow generalize the shapes that vary (reduce_retracing=True)",
        code,
        edits,
        replace(state, config=replace(state.config, reduce_retracing=True)),
        refused=None if refused is None else refused.raised,
    )


def _relaxed_refused(ctx: FunctionContext, state: State) -> TraceRefused | None:
    """What TensorFlow raised tracing the body with every dimension that varied open, as the relaxed trace
    would; None where it traced, or could not be asked (a Python value among the arguments: the relaxed
    trace keeps it, which no signature can say)."""
    calls = state.replay.calls
    if ctx.probe is None or ctx.definition is None or any(leaf.kind != TENSOR for c in calls for leaf in c.signature):
        return None
    folded = fold_all([c.signature for c in calls])
    specs = None if folded is None else signature_specs(list(folded), ctx.definition.params, ctx.tf)
    if specs is None:
        return None
    said = ctx.signature_said("[" + ", ".join(specs) + "]", state.body, state.hoisted)
    return said if isinstance(said, TraceRefused) else None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        "TensorFlow traces with None dimensions after a shape changes: code reading a static shape may "
        "fail or take another branch",
        "TensorFlow's own relaxation of shapes",
    ),
    check=declaration("reduce_retracing"),
    generalizes=True,
    row=Row(
        "unsafe",
        "TensorFlow traces with `None` dimensions after a shape changes: code reading a static shape may "
        "fail or take another branch",
    ),
    position=120,
    makers=(Maker(reduce_retracing, 30, PHASE_FINAL),),
)
