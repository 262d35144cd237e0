"""Maker for a Python number inside a dict argument (``step(x, {"lr": lr})``): advice to make it a tensor there.

TensorFlow keys a trace on every Python value in an argument's structure, so a learning rate in a
hyperparameter dict traces once per value, as a top-level Python number does. The top-level case is
an edit at the call site, checked by TensorFlow (fix.kinds.tensor_argument), and so is a value one
level deep in a dict the call writes out (``{"lr": lr}``), where TensorFlow ran both versions to the
same results. Deeper, or in a dict built elsewhere, the value is the program's to change where it
builds the dict. So this is a step by hand, with its count: the replay with that leaf a scalar tensor.
It is offered only where the recorded values there were floats (some may be ints: ``1`` for
``1.0``), and every level above it a dict (a list of numbers is fix.kinds.tensor_argument's ``lists``).
No edit kind is declared: its maker is listed in ``MAKERS``, as fix.kinds.objects does.
"""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.call_edits import swap_leaf
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.kind import Maker
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.specs import NUMBER_DTYPES, is_top
from tfretrace.records.events import PYTHON, TENSOR, Leaf


def nested_numbers(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A varying float inside a dict argument: by hand, make it a scalar tensor where the dict is built."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, PYTHON):
        if is_top(path) or not _under_dicts(calls, path):
            continue
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        types = {leaf.type_name for leaf in leaves}
        if any(leaf.kind != PYTHON for leaf in leaves) or "float" not in types or not types <= {"int", "float"}:
            continue  # an int there may be a size, an index or a count, and int tensors refuse float math
        dtype = NUMBER_DTYPES["float"]
        tensor = Leaf(path, TENSOR, dtype=dtype, shape=())
        new = {c.index: replace(c, signature=swap_leaf(c.signature, path, tensor)) for c in calls}
        out.append(Candidate(
            "python-value-changed",
            "advice",
            # The dtype is not asked of TensorFlow here: the one of the tensors it meets (float64 ones refuse float32).
            f"make {path} a tensor where that dict is built ({ctx.tf}.constant(value, dtype=...), in the dtype of "
            f"the tensors it meets: {ctx.tf}.{dtype} for most models), if {ctx.short} uses it only in tensor math: "
            "a Python number anywhere in an argument traces once per value",
            None,
            (),
            state.map_calls(dict(new)),
        ))
    return out


def _under_dicts(calls: tuple[Call, ...], path: str) -> bool:
    """Whether every recorded leaf on the way down to ``path`` (``hp``, ``hp['opt']``) is a dict."""
    heads = [leaf for c in calls for leaf in c.signature if path.startswith(leaf.path + "[")]
    return bool(heads) and all(leaf.kind == "dict" for leaf in heads)


# No edit kind of its own (its step is by hand): its maker is listed here.
MAKERS = (Maker(nested_numbers, 45),)
