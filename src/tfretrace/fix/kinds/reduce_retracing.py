"""Fix kind reduce-retracing: ``reduce_retracing=True`` where TensorFlow's generalization removes traces."""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.body import reads_static_size
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.declaration import declaration, decorator_edit
from tfretrace.fix.core.kind import PHASE_FINAL, Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.rules import fold_all
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.specs import is_top, signature_specs
from tfretrace.records.events import TENSOR, TraceRefused

NAME = "reduce-retracing"


def reduce_retracing(ctx: FunctionContext, state: State) -> Candidate | None:
    """reduce_retracing=True, offered only where TF's generalization removes traces."""
    if state.config.reduce_retracing or ctx.report.keras is not None:
        return None
    node = None if ctx.definition is None else ctx.definition.node
    varied = varying_paths(state.replay.calls, TENSOR)
    opened = _opened(state.replay.calls, varied)
    if node is not None and any(_opened_size_read(node, path, opened) for path in varied):
        # Generalized to a None dimension, x.shape[0] is None and len(x) fails in the new trace.
        return None
    code, edits = decorator_edit(ctx, "reduce_retracing=True", state)
    tf_check = None
    if ctx.probe_relaxed is not None and opened is not None and not state.body and not state.hoisted:
        # Issue 38: TensorFlow traces each recorded call as the relaxed trace would see it (a Python value
        # beside the tensors included, which no signature text can say) and runs both versions.
        said = ctx.probe_relaxed(opened)
        tf_check = TF_CHECKED if said is None else str(said)
        refused = said if isinstance(said, TraceRefused) else None
    else:
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
        tf_check=tf_check,
    )


def _opened(calls: tuple[Call, ...], varied: list[str]) -> dict[str, tuple[int | None, ...]] | None:
    """Each varying tensor parameter's shape with the sizes that differ open, as TensorFlow's relaxed trace has
    them; None where one is not a parameter itself or changes rank (the relaxed trace is then not asked)."""
    opened: dict[str, tuple[int | None, ...]] = {}
    for path in varied:
        shapes = {leaf.shape for c in calls for leaf in c.signature if leaf.path == path and leaf.kind == TENSOR}
        if not is_top(path) or None in shapes or len({len(s) for s in shapes if s is not None}) != 1:
            return None
        dims = list(zip(*[s for s in shapes if s is not None], strict=True))
        opened[path] = tuple(d[0] if len(set(d)) == 1 else None for d in dims)
    return opened or None


def _opened_size_read(node: ast.AST, path: str, opened: dict[str, tuple[int | None, ...]] | None) -> bool:
    """The body reads, as a Python number, a size of ``path`` that the relaxed trace opens (any size where unknown)."""
    shape = None if opened is None else opened.get(path)
    if shape is None:
        return reads_static_size(node, path)
    dims = {i for i, d in enumerate(shape) if d is None}
    return reads_static_size(node, path, rank=len(shape), dims=dims)


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
        "TensorFlow's own relaxation of shapes, asked once the run is over: each recorded call traced by a fresh "
        "tf.function of the same Python function with the sizes that varied open (Python values as recorded), "
        "to outputs of the structure, dtypes and ranks of its trace, each static size open or equal, and run beside "
        "that trace on the same inputs to the same results within the last digits of floats",
        probed=True,
    ),
    check=declaration("reduce_retracing"),
    generalizes=True,
    row=Row(
        "safe when TensorFlow says so",
        "once the program `tfretrace run` recorded has finished, each recorded call is traced again by a fresh "
        "`tf.function` of the same Python function with the sizes that varied open and its Python values as "
        "they were (what the relaxed trace sees, which no signature text can say beside a Python value), and "
        "TensorFlow runs it beside the recorded trace; safe only where every output agrees (floats within the "
        "last digits), on inputs of the sizes the run recorded (a body special-casing a size no call had is not "
        "seen). Unsafe where it was not asked (no live function, a body with an effect outside its outputs such as "
        "a print or a random draw, which is not run): TensorFlow traces with `None` dimensions after a shape "
        "changes, and code reading a static shape may fail or take another branch",
    ),
    position=120,
    makers=(Maker(reduce_retracing, 30, PHASE_FINAL),),
)
