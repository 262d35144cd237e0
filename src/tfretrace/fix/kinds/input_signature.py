"""Fix kind input-signature: one signature for every recorded call, open where sizes vary; maker, anchors, class."""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.body import number_dtype, python_if, reads_static_size, steers_control_flow, unsafe_uses
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.declaration import declaration, decorator_edit
from tfretrace.fix.core.kind import PHASE_FINAL, Kind, Maker, Row
from tfretrace.fix.core.predict import Call, Config, count
from tfretrace.fix.core.rules import fold_all
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.signature_defaults import defaults_left_out, left_out_line, left_out_reason
from tfretrace.fix.core.specs import NUMBER_DTYPES, is_top, signature_specs
from tfretrace.fix.core.tensor_body import value_condition
from tfretrace.records.events import PYTHON, TENSOR, Leaf, TraceRefused

NAME = "input-signature"


def final_signature(ctx: FunctionContext, state: State) -> Candidate | None:
    """The one input_signature covering every call seen, with the dims that varied and the batch dims open."""
    if ctx.report.keras is not None or ctx.definition is None:
        return None
    calls = state.replay.calls
    node = ctx.definition.node
    # `def __call__(self, x, preds=False)` never passed preds: the spec covers x only and TensorFlow
    # binds preds=False as a constant (no spec can be written for a Python bool).
    left_out = defaults_left_out(node, ctx.definition.params, [*calls, *state.replay.save_calls])
    if node is not None and _omitted_somewhere(ctx, calls, [p for p in _defaults_none(node) if p not in left_out]):
        # `def sample(self, eps=None)` also called as `sample()`: that call binds None, which no
        # TensorSpec accepts; the recorded calls all passed eps, that one (not run here) does not.
        return None
    numbers: dict[str, Leaf] = {}
    for call in calls:
        for leaf in call.signature:
            at_default = leaf.path in left_out
            if leaf.kind == PYTHON and leaf.type_name in NUMBER_DTYPES and is_top(leaf.path) and not at_default:
                dtype = NUMBER_DTYPES[str(leaf.type_name)]
                if leaf.type_name == "int" and node is not None:
                    dtype = number_dtype(node, leaf.path)  # a tf.summary step must be int64
                numbers[leaf.path] = Leaf(leaf.path, TENSOR, dtype=dtype, shape=())
    varied = set(varying_paths(calls, PYTHON))
    if node is not None and any(unsafe_uses(node, p) or python_if(node, p) for p in numbers):
        return None
    # A number that never changed and steers Python control flow stays a Python value: as a
    # tensor it would turn the if/loop into graph control flow for nothing.
    if node is not None and any(p not in varied and steers_control_flow(node, p) for p in numbers):
        return None
    converted = [
        tuple(numbers.get(leaf.path, leaf) if leaf.kind == PYTHON else leaf for leaf in c.signature) for c in calls
    ]
    # fold_all has no common type for two dtypes (or a tensor and a string) at one position: then
    # no single signature accepts every recorded call and none is written.
    # A save's own calls (an export wrapper's input_signature passing (None, 784)) must bind too.
    folded = fold_all([*converted, *(c.signature for c in state.replay.save_calls)])
    if folded is None:
        return None
    if node is not None and any(_varied_size_read(node, leaf) for leaf in folded):
        return None
    general, pinned = _open_batch_dims(folded, converted, node)
    covered = [p for p in ctx.definition.params if p not in left_out]
    specs = signature_specs([leaf for leaf in general if _root(leaf.path) not in left_out], covered, ctx.tf)
    if specs is None:
        return None
    general, specs, pinned, tf_check = _probed(ctx, state, folded, general, specs, pinned, covered)
    if tf_check == TF_CHECKED:
        tf_check = _numbers_as_data(ctx, numbers, state) or TF_CHECKED
    if left_out:
        pinned = "; ".join(p for p in (pinned, left_out_line(left_out)) if p)
        if tf_check == TF_CHECKED:
            tf_check = left_out_reason(left_out)  # every input accepted before is no longer accepted
    config = Config(reduce_retracing=state.config.reduce_retracing, input_signature=general)
    new_state = replace(
        state.map_calls({c.index: replace(c, signature=s) for c, s in zip(calls, converted)}), config=config
    )
    if count(new_state.replay, config) is None:
        return None  # some call would not bind: never offer it
    text = "[" + ", ".join(specs) + "]"
    if len(text) > 70:
        text = "[\n    " + ",\n    ".join(specs) + ",\n]"
    code, edits = decorator_edit(ctx, f"input_signature={text}", state)
    refused = None
    if isinstance(tf_check, TraceRefused):
        # TensorFlow raised tracing the signature written: the edited program would fail at its first call.
        edits, refused = (), tf_check.raised
    opened = _opened(folded)
    return Candidate(
        _remaining_cause(calls, ctx.report.main_cause),
        NAME,
        "one input_signature for every call seen"
        + (f", open where they varied: {opened}" if opened else "")
        + (f"; {pinned}" if pinned else "")
        + _xla_caveat(ctx, bool(opened)),
        code,
        edits,
        new_state,
        final=True,
        pinned=pinned or None,
        tf_check=tf_check,
        refused=refused,
    )


def _probed(
    ctx: FunctionContext, state: State, folded: tuple[Leaf, ...], general: tuple[Leaf, ...], specs: list[str],
    pinned: str, covered: list[str],
) -> tuple[tuple[Leaf, ...], list[str], str, str | None]:
    """Every dimension open where TensorFlow traces the body so to the run's outputs; else the signature as it was.

    A dimension is pinned only where the body needs it static, never because it was constant in
    one run: the probe (the recorded run's live function, traced afresh) decides. Returns the
    signature, its spec texts, the pinned line and what TensorFlow said (TF_CHECKED or why not);
    None where no probe ran. ``covered``: the parameters the specs are for.
    """
    if ctx.probe is None or ctx.definition is None:
        return general, specs, pinned, None
    if state.replay.variable_traces:
        # The first call made variables (a layer built on its first input): the probe, run once the
        # program has finished, traces the body as it runs now, past that code. Measured on the
        # Core APIs MLP: every dimension open traces there, and the edited program's first call
        # then fails (the layer's `x.shape[1]` is None). Only the signature with the sizes every
        # call had is written, and TensorFlow is asked only about the calls after the first.
        # Issue 38: the variables exist once the run is over, so the signature is asked of the live
        # object; a trace that would still create one is stopped and says so (runtime.probe).
        said = ctx.signature_said("[" + ", ".join(specs) + "]", state.body, state.hoisted)
        return general, specs, pinned, said or TF_CHECKED
    open_all = tuple(
        replace(leaf, shape=tuple(None for _ in leaf.shape)) if leaf.kind == TENSOR and leaf.shape else leaf
        for leaf in folded
    )
    open_specs = signature_specs([leaf for leaf in open_all if _root(leaf.path) in covered], covered, ctx.tf)
    if open_specs is None:
        return general, specs, pinned, None
    # A body an earlier step edits (tensor-argument) is traced, and run, as that step writes it.
    said = ctx.signature_said("[" + ", ".join(open_specs) + "]", state.body, state.hoisted)
    if said is not None:
        # Not every dimension can be open: the signature written (batch dimensions open, the others as every
        # call had them) is asked in its turn, and its own answer is the step's.
        written = said if specs == open_specs else ctx.signature_said("[" + ", ".join(specs) + "]", state.body,
                                                                      state.hoisted)
        return general, specs, pinned, written or TF_CHECKED
    line = "every dimension open: TensorFlow traced the body so, to the outputs of every trace of this run"
    return open_all, open_specs, line, TF_CHECKED


def _numbers_as_data(ctx: FunctionContext, numbers: dict[str, Leaf], state: State) -> str | None:
    """Why a Python number the signature makes a tensor is not the same computation; None where each is data.

    The open signature's probe compares outputs; a number folded into each trace as a constant
    may also have steered the body's Python (an if, arithmetic, a shape): TensorFlow replays every
    trace with the number a tensor and compares the graphs (fix.tensor_body's ``value_condition``).
    """
    for path, leaf in sorted(numbers.items()):
        dtype = str(leaf.dtype)
        found, said, depends, _compared = ctx.tensor_dtype(path, (dtype,), state.body, state.hoisted)
        if found is None:
            return f"{path} as a {dtype} tensor: " + (said or "TensorFlow could not replay the run's traces with it")
        reason = value_condition(dtype, depends)
        if reason is not None:
            return f"{path} as a {dtype} tensor: {reason}"
    return None


def _root(path: str) -> str:
    """The parameter a leaf path belongs to (``x`` for ``x[0]`` or ``x.a``)."""
    for i, ch in enumerate(path):
        if ch in "[.":
            return path[:i]
    return path


def _open_batch_dims(
    general: tuple[Leaf, ...], calls: list[tuple[Leaf, ...]], node: ast.AST | None
) -> tuple[tuple[Leaf, ...], str]:
    """The signature with every batch dimension open, and a line naming what is opened and what stays pinned.

    A batch dimension follows how much data there is (a partial last batch, another data set):
    a constant one in this run is an accident of the data, and pinning it would make the edited
    program fail (``Binding inputs to tf.function failed``) on other data. It is dim 0 of a
    tensor of rank 2 or more, and of a vector as long as one of those in every call (labels). A
    dimension the body reads as a Python number (``x.shape[0]``, ``len(x)``) stays as it is.
    """
    batch = {leaf.path for leaf in general if leaf.kind == TENSOR and leaf.shape is not None and len(leaf.shape) >= 2}
    for leaf in general:
        vector = leaf.kind == TENSOR and leaf.shape is not None and len(leaf.shape) == 1
        if vector and _follows_batch(leaf.path, batch, calls):
            batch.add(leaf.path)
    out: list[Leaf] = []
    opened: list[str] = []
    kept: list[str] = []
    static: set[str] = set()
    for leaf in general:
        if leaf.kind != TENSOR or leaf.shape is None or not leaf.shape:
            out.append(leaf)
            continue
        shape = list(leaf.shape)
        if leaf.path in batch and shape[0] is not None:
            if node is not None and reads_static_size(node, leaf.path, leading_only=True, rank=len(shape)):
                kept.append(f"{leaf.path} dim 0 stays {shape[0]} ({_static(leaf.path)} is read as a Python number)")
                static.add(leaf.path)
            else:
                opened.append(f"{leaf.path} dim 0")
                shape[0] = None
        fixed = [str(i) for i, d in enumerate(shape) if d is not None]
        if fixed and leaf.path not in static:
            kept.append(f"{leaf.path} dim{'s' if len(fixed) > 1 else ''} {', '.join(fixed)} (the same in every call)")
        out.append(replace(leaf, shape=tuple(shape)))
    parts = []
    if opened:
        parts.append(f"open though constant in this run: {', '.join(opened)} (a batch dimension follows the data size)")
    if kept:
        parts.append(f"pinned: {'; '.join(kept)}")
    return tuple(out), "; ".join(parts)


def _follows_batch(path: str, batch: set[str], calls: list[tuple[Leaf, ...]]) -> bool:
    # A vector whose length is the leading dimension of a batched tensor in every call.
    for signature in calls:
        by_path = {leaf.path: leaf for leaf in signature}
        mine = by_path.get(path)
        if mine is None or not mine.shape:
            return False
        leads = {by_path[p].shape[0] for p in batch if p in by_path and by_path[p].shape}  # type: ignore[index]
        if mine.shape[0] not in leads:
            return False
    return bool(calls)


def _static(path: str) -> str:
    return f"{path}.shape[0] or len({path})"


def _xla_caveat(ctx: FunctionContext, opened: bool) -> str:
    # With jit_compile, XLA compiles once per concrete shape even under a None dimension.
    text = (ctx.definition.decorator_text or ctx.definition.wrap_text or "") if ctx.definition else ""
    if opened and "jit_compile=True" in text:
        return "; with jit_compile=True XLA still compiles once per concrete shape: pad to a few sizes to bound that"
    return ""


def _remaining_cause(calls: tuple[Call, ...], fallback: str | None) -> str:
    # The root cause this last step removes: what still varies between the calls.
    kinds = {leaf.kind for path in varying_paths(calls) for c in calls[:1] for leaf in c.signature if leaf.path == path}
    if TENSOR in kinds:
        return "shape-changed"
    if PYTHON in kinds:
        return "python-value-changed"
    return fallback or "shape-changed"


def _opened(general: tuple[Leaf, ...]) -> str:
    parts = []
    for leaf in general:
        if leaf.kind == TENSOR and leaf.shape is None:
            parts.append(f"{leaf.path} (any rank)")
        elif leaf.kind == TENSOR and leaf.shape is not None and None in leaf.shape:
            dims = [str(i) for i, d in enumerate(leaf.shape) if d is None]
            parts.append(f"{leaf.path} dim{'s' if len(dims) > 1 else ''} {', '.join(dims)}")
    return "; ".join(parts)


def _defaults_none(node: ast.AST) -> list[str]:
    """The parameters whose default is ``None``: a call may leave them out, and no TensorSpec takes None."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    positional = [*node.args.posonlyargs, *node.args.args]
    pairs = [*zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults, strict=True),
             *((a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d is not None)]
    return [a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None]


def _omitted_somewhere(ctx: FunctionContext, calls: tuple[Call, ...], params: list[str]) -> bool:
    # Some call of the function in the files that called it (recorded or not) leaves one out, or
    # cannot be read.
    if not params:
        return False
    for site in ctx.all_sites(calls):
        info = ctx.call_info(site)
        if info is None or any(info.arg(p) is None for p in params):
            return True
    return False


def _varied_size_read(node: ast.AST, leaf: Leaf) -> bool:
    """A dimension that varied (open in the signature) which the body reads as a Python number.

    Traced under a None dimension, ``x.shape[0]`` is None and ``len(x)`` fails: the edited program
    would compute something else or crash where each shape's own trace saw a number.
    """
    if leaf.kind != TENSOR or (leaf.shape is not None and not leaf.shape):
        return False
    if leaf.shape is None:
        return reads_static_size(node, leaf.path)  # its rank varied: any size read counts
    opened = {i for i, d in enumerate(leaf.shape) if d is None}
    return bool(opened) and reads_static_size(node, leaf.path, rank=len(leaf.shape), dims=opened)


_GENERALIZES = (
    "the body sees None where each call had a size, and a dimension constant in this run is pinned: "
    "code reading a static shape (x.shape[1], tf.random.normal(shape=x.shape)) may fail or take another "
    "branch, and a call of another size is refused; TensorFlow did not trace the open signature (no live "
    "function to probe)"
)


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        _GENERALIZES,
        "every dimension open, and TensorFlow traced the body with that signature (a fresh tf.function of "
        "the same Python function, in the recorded run) to outputs of the structure, dtypes and ranks of every "
        "trace of the run, each static size open or the same: it accepts every input the original did",
        probed=True,
    ),
    check=declaration("input_signature"),
    generalizes=True,
    row=Row(
        'safe when TensorFlow says so',
        'once the program `tfretrace run` recorded has finished (not under `tfretrace.watch()`), '
        "TensorFlow traces the run's module-level tf.function afresh (a new `tf.function` of the same "
        "Python function: the program's object and cache are untouched) with **every** dimension open "
        '(`get_concrete_function`); safe, and written so (`"checked": "tensorflow"`), only where that '
        'trace succeeds and its outputs have the structure, dtypes and ranks of every trace of the run, '
        'each static size open or equal. A Python number in the signature is tried as the tensor it '
        "becomes (a float32 times float64 data fails there), and each trace's graph is compared with the "
        'graph of the number as a tensor: where they part, or the number is an `int`, the step is unsafe '
        '([below](#python-values-made-tensors)). A method is traced on each live instance (a decorated '
        'method, or `tf.function(self.method)`). Otherwise (TensorFlow fails or gives other outputs, or '
        'no live function is found: a nested def whose objects were not all kept by the recorded run, an '
        'object that is gone) unsafe, with what TensorFlow said; the signature then pins what was constant, '
        'and refuses a call of another size. A function '
        'whose first call created variables (a Keras model and optimizer built at the first train step) '
        'is asked once they exist, with the signature that keeps the sizes every call had (the probe, '
        "after the program, traces past the code that made them: `mlp_core.py`'s layers read "
        '`x.shape[1]`, so those sizes stay pinned); a trace that would still create a variable on the '
        'live object is stopped before it does, and the step is unsafe, saying so. Also unsafe: a '
        'signature that leaves out a trailing parameter every call left at its default (TensorFlow binds '
        "that default and refuses another value) The probe runs the body's Python once more: prints are "
        'swallowed, other trace-time side effects happen',
        '`p05_static_shape.py`, `p05b_derived_shape.py` (item 5); `p14_rate_helper_type_test.py` (a '
        "helper's `isinstance(rate, float)` under an open signature: the number's graphs part, unsafe); "
        '`p12_padded.py` (a padded length of 12 in every recorded call) is made safe, open; '
        '`module_signature/mlp_core.py` (unsafe: 9 -> 3 with `--unsafe-fixes`, same output) and '
        '`module_signature/module_methods.py` (safe, methods probed)',
    ),
    declares_signature=True,
    position=90,
    makers=(Maker(final_signature, 20, PHASE_FINAL),),
)
