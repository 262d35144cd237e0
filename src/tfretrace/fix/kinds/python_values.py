"""Python numbers and bools passed as tensors at the call site, of the dtype TensorFlow traced the body with."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.body import number_dtype
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.safety import TF_CHECKED
from tfretrace.fix.core.specs import NUMBER_DTYPES, is_top
from tfretrace.fix.core.tensor_body import body_note, tensor_body, with_body
from tfretrace.fix.kinds.callsite import missing_note, preview, reached, swap_leaf
from tfretrace.records.events import PYTHON, TENSOR, Leaf


def python_numbers(ctx: FunctionContext, state: State) -> list[Candidate]:
    """Varying Python int/float/bool arguments become tensors at the call site, of the dtype TensorFlow accepts.

    Where the run's function can be traced again (``ctx.probe_argument``), TensorFlow decides: the
    argument is tried as a scalar tensor of each candidate dtype (floats: float32, then float64;
    ints: the one a ``tf.summary`` step needs first; bools: bool) and the first whose trace gives
    every recorded trace's outputs is written, so the dtype is the one the graph combines it
    with. Where none traces so, no edit: a statement with what TensorFlow said. Where TensorFlow
    cannot be asked, numbers are guessed from the source as before and bools stay a statement.
    """
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, PYTHON):
        if not is_top(path):
            continue
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        types = {leaf.type_name for leaf in leaves if leaf.kind == PYTHON}
        if any(leaf.kind != PYTHON for leaf in leaves):
            continue  # None -> tensor and the like: none_to_zeros
        if not types <= {"int", "float"} and types != {"bool"}:
            continue
        found = _number(ctx, state, path, types)
        if found is not None:
            out.append(found)
    return out


def _number(ctx: FunctionContext, state: State, path: str, types: set[str | None]) -> Candidate | None:
    calls = state.replay.calls
    flag = types == {"bool"}
    guess = "bool" if flag else NUMBER_DTYPES["float" if "float" in types else "int"]
    node = None if ctx.definition is None else ctx.definition.node
    if guess == "int32" and node is not None:
        guess = number_dtype(node, path)  # a tf.summary step must be int64
    # What no trace can show: a use that reads the Python value silently (an f-string, a dict key).
    rewritten, problem = tensor_body(ctx, path, guess, arithmetic=False, probed=True)
    if problem:
        return _python_use(ctx, path, problem)
    order = {"float32": ("float32", "float64"), "int32": ("int32", "int64"), "int64": ("int64", "int32")}
    # TensorFlow traces the body as it is: one the step edits too (tf.constant(n) becomes
    # tf.convert_to_tensor(n)) is not the body it would trace, so it is not asked.
    dtype, said = (None, None) if rewritten else ctx.tensor_dtype(path, order.get(guess, (guess,)))
    if said is not None:
        return Candidate(
            "python-value-changed",
            "statement",
            f"{path} takes a new Python value per call, and TensorFlow refuses it as a scalar tensor ({said}): it "
            "cannot simply become a tensor; each new value costs one trace",
            None,
            python_use=said,
        )
    if dtype is None and flag:
        return _flag_statement(ctx, path)
    checked = dtype is not None
    dtype = dtype or guess
    body, problem = tensor_body(ctx, path, dtype, arithmetic="float" not in types and not checked, probed=checked)
    if problem:
        return _python_use(ctx, path, problem)
    tensor = Leaf(path, TENSOR, dtype=dtype, shape=())
    new = {c.index: replace(c, signature=swap_leaf(c.signature, path, tensor)) for c in calls}
    edits, missing = ctx.arg_edits(calls, path, f"{{tf}}.constant({{expr}}, dtype={{tf}}.{dtype})")
    fallback = f"{ctx.short}(..., {path}={ctx.tf}.constant({path}, dtype={ctx.tf}.{dtype}))"
    code = preview(ctx, body, edits) or fallback
    edits = with_body(edits, body, missing)
    verdict = (
        f" ({dtype}: TensorFlow traced {ctx.short} so, to the outputs of every trace of this run)" if checked else ""
    )
    return Candidate(
        "python-value-changed",
        "tensor-argument",
        f"pass {path} as a {dtype} tensor at the call site" + verdict + body_note(body, ctx) + missing_note(missing),
        code,
        edits,
        state.map_calls(reached(new, calls, missing)),
        tf_check=TF_CHECKED if checked else None,
    )


def _python_use(ctx: FunctionContext, path: str, problem: str) -> Candidate:
    return Candidate(
        "python-value-changed",
        "statement",
        f"{path} takes a new Python value per call, but {ctx.short} uses it as a Python value "
        f"({problem}): it cannot simply become a tensor; each new value costs one trace",
        None,
        python_use=problem,
    )


def _flag_statement(ctx: FunctionContext, path: str) -> Candidate:
    # TensorFlow was not asked: a bool stays a Python value, two traces at most.
    return Candidate(
        "python-value-changed",
        "statement",
        f"{path} is a Python bool: one trace per value (True/False) is expected and cheap; "
        f"pass {ctx.tf}.constant({path}) only if it changes often",
        None,
    )
