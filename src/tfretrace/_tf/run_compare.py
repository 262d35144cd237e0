"""TensorFlow runs both versions: a recorded trace and the general trace on the same inputs, every output compared.

Where the graph comparison (graph_compare) finds a recorded trace and the trace with a Python
value as a tensor to be different graphs, they may still compute the same thing by other
operations (an index folded into a slice's constants, ``n ** 3`` folded into one constant). Only
running both says so: each recorded trace's concrete function and the general one are run on the
same inputs, made from the recorded signature (random draws and edge values of its shapes and
dtypes, the recorded Python values), and every output and every variable they leave is compared.
Variables are read before each run and restored after it, so the program's state is as it was. A
body whose graph has effects outside its outputs and variables (a ``py_function``, file or summary
writes, ``tf.print``, an iterator, a stateful random op, a table) is never run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tfretrace._tf.native_log import native_log_held
from tfretrace._tf.recorded import recorded_arguments

# A recorded call's made arguments -> the arguments the general concrete function takes.
Converter = Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]

# Stateful operations a comparison may run: they only read or write variables (restored after
# each run), call a function (whose own operations are checked too), or branch and assert.
_VARIABLE_OPS = frozenset({
    "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
    "VarIsInitializedOp", "VariableShape", "DestroyResourceOp", "StatefulPartitionedCall", "If", "While", "Case",
    "Assert",
    "NoOp", "Placeholder",
})
_VARIABLE_PREFIXES = ("ResourceApply", "ResourceSparseApply", "ResourceGather", "ResourceScatter", "ResourceStrided")

# Random draws per recorded trace, and the edge values every tensor is also filled with.
_DRAWS = 3
_EDGES = ("zero", "one", "minus one", "max", "min")
# A dimension the recorded signature left open is given this size.
_OPEN_SIZE = 2
# The float-last-digits rule of a generalizing step: relative to the largest magnitude of the output.
_RELATIVE = 1e-5


def effect(graph: Any) -> str | None:
    """The first operation type in ``graph`` (or a function it holds) with an effect outside its outputs, or None."""
    from tensorflow.python.framework import op_def_registry

    types = {op.type for op in graph.get_operations()}
    for function in getattr(graph, "_functions", {}).values():
        definition = getattr(function, "definition", None)
        if definition is not None:
            types.update(node.op for node in definition.node_def)
    for name in sorted(types):
        op_def = op_def_registry.get(name)
        if op_def is None or not op_def.is_stateful:
            continue  # a function called by name (its body is in the library, checked too), or pure
        if name in _VARIABLE_OPS or name.startswith(_VARIABLE_PREFIXES):
            continue
        return str(name)
    return None


def compare_runs(
    recorded: Any, general: Any, at: int | str, tensor: Any, exact: bool = False
) -> tuple[int, str | None]:
    """How many inputs both concrete functions computed the same on, and where they differ (None: nowhere).

    ``recorded``: a trace of the run (the Python value folded in); ``general``: the same body traced
    with that argument (``at``, an index or keyword) a tensor; ``tensor``: the value as that tensor.
    ``(0, why)`` where they were not run (an effect, an input that cannot be made) or no input ran.
    ``exact``: every output the same bit for bit (a step that announces no change in the results).
    """

    def convert(call_args: tuple[Any, ...], call_kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if isinstance(at, int):
            return (*call_args[:at], tensor, *call_args[at + 1:]), call_kwargs
        return call_args, {**call_kwargs, at: tensor}

    return compare_converted(recorded, general, convert, exact)


def compare_converted(
    recorded: Any, general: Any, convert: Converter, exact: bool = False, widened: bool = False
) -> tuple[int, str | None]:
    """As ``compare_runs``, with ``general``'s arguments made by ``convert`` from those made for ``recorded``.

    For a function as a fix would write it (_tf.edited): the recorded trace's Python values and
    lists of tensors become what the edited call sites pass. TensorFlow's native log lines about
    inputs a trace refuses are kept off the user's stderr (native_log). ``widened``: ``general`` takes an int
    as int64 where the recorded trace computed in int32; integer results are compared as values.
    """
    with native_log_held():
        return _compared(recorded, general, convert, exact, widened)


def _compared(recorded: Any, general: Any, convert: Converter, exact: bool, widened: bool) -> tuple[int, str | None]:
    import tensorflow as tf

    for concrete in (recorded, general):
        found = effect(concrete.graph)
        if found is not None:
            return 0, f"not run: the body has an effect outside its outputs ({found})"
    recorded_args = recorded_arguments(recorded)
    if recorded_args is None:
        return 0, "not run: an object the trace was made for (a model passed in) is gone"
    args, kwargs = recorded_args
    variables = _variables(recorded, general)
    compared = 0
    for made in _inputs(tf, (tuple(args), dict(kwargs))):
        if made is None:
            return 0, "not run: an input of a dtype tfretrace does not make"
        call_args, call_kwargs = made
        try:
            general_args, general_kwargs = convert(tuple(call_args), dict(call_kwargs))
        except Exception as exc:  # a value the edited call site could not pass either
            return compared, f"on input {compared + 1}, the edited call's arguments failed ({type(exc).__name__})"
        # Variables made for the call's own arguments (a variable passed in) are compared and restored too.
        known = {id(v) for v in variables}
        passed = [x for x in tf.nest.flatten((call_args, call_kwargs)) if isinstance(x, tf.Variable)]
        every = variables + list({id(v): v for v in passed if id(v) not in known}.values())
        theirs = _run(tf, recorded, call_args, call_kwargs, every)
        ours = _run(tf, general, general_args, general_kwargs, every)
        if isinstance(theirs, BaseException) and isinstance(ours, BaseException):
            continue  # an input both refuse (an index out of range): not one they compute
        if isinstance(theirs, BaseException) or isinstance(ours, BaseException):
            failed = theirs if isinstance(theirs, BaseException) else ours
            which = "the recorded trace" if failed is theirs else "the general trace"
            return compared, f"on input {compared + 1}, only {which} failed ({type(failed).__name__})"
        differs = _differs(ours, theirs, exact, widened)
        if differs is not None:
            return compared, f"on input {compared + 1}, {differs}"
        compared += 1
    return compared, None if compared else "no input ran on both"


def _variables(*functions: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    for function in functions:
        for variable in getattr(function, "variables", ()):
            seen.setdefault(id(variable), variable)
    return list(seen.values())


def _run(tf: Any, function: Any, args: Any, kwargs: Any, variables: list[Any]) -> Any:
    """The outputs (numpy) and the variables' values after one run; the variables restored; an exception as raised."""
    kept = [variable.numpy() for variable in variables]
    try:
        outputs = function(*args, **kwargs)
        flat = [_numpy(x) for x in tf.nest.flatten(outputs, expand_composites=True)]
        return flat + [variable.numpy() for variable in variables]
    except Exception as exc:  # what TensorFlow raised on this input: compared by whether both raise
        return exc
    finally:
        for variable, value in zip(variables, kept, strict=True):
            variable.assign(value)


def _numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def _inputs(tf: Any, signature: Any) -> Iterator[Any]:
    """The recorded signature's arguments, tensors filled with random draws and then each edge value.

    A variable argument (``VariableSpec``) gets a new variable of its shape, dtype and trainable
    flag, filled the same way, made for the comparison alone (never the program's); arguments the
    trace saw as one variable (one ``alias_id``) get one.
    """
    import numpy as np
    from tensorflow.python.ops.resource_variable_ops import VariableSpec

    leaves = tf.nest.flatten(signature)
    specs = [leaf for leaf in leaves if isinstance(leaf, (tf.TensorSpec, VariableSpec))]
    if any(not (s.dtype.is_floating or s.dtype.is_integer or s.dtype.is_bool) for s in specs):
        yield None
        return
    rng = np.random.default_rng(0)
    for fill in (*([None] * _DRAWS), *_EDGES):
        shared: dict[Any, Any] = {}
        made = [_made(tf, np, rng, leaf, fill, shared, VariableSpec) for leaf in leaves]
        yield tf.nest.pack_sequence_as(signature, made)


def _made(tf: Any, np: Any, rng: Any, leaf: Any, fill: str | None, shared: dict[Any, Any], variable: Any) -> Any:
    if isinstance(leaf, tf.TensorSpec):
        return tf.constant(_filled(np, rng, leaf, fill), dtype=leaf.dtype)
    if not isinstance(leaf, variable):
        return leaf
    alias = getattr(leaf, "alias_id", None)
    if alias is not None and alias in shared:
        return shared[alias]
    made = tf.Variable(_filled(np, rng, leaf, fill), dtype=leaf.dtype, trainable=bool(leaf.trainable))
    if alias is not None:
        shared[alias] = made
    return made


def _filled(np: Any, rng: Any, spec: Any, fill: str | None) -> Any:
    shape = [_OPEN_SIZE if d is None else d for d in (spec.shape.as_list() if spec.shape.rank is not None else [])]
    dtype = spec.dtype.as_numpy_dtype
    if spec.dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool) if fill is None else np.full(shape, fill in ("one", "max"))
    if fill is None:
        if spec.dtype.is_integer:
            low = 0 if spec.dtype.is_unsigned else -3
            return rng.integers(low, 4, shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype) if spec.dtype.is_integer else np.finfo(dtype)
    value = {"zero": 0, "one": 1, "minus one": -1, "max": info.max, "min": info.min}[fill]
    if spec.dtype.is_unsigned and value == -1:
        value = 0
    return np.full(shape, value, dtype=dtype)


def _differs(ours: list[Any], theirs: list[Any], exact: bool = False, widened: bool = False) -> str | None:
    import numpy as np

    if len(ours) != len(theirs):
        return f"the general trace gave {len(ours)} results where the recorded one gave {len(theirs)}"
    for number, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        if widened and a.dtype != b.dtype and a.dtype.kind in "iu" and b.dtype.kind in "iu":
            a, b = a.astype(np.int64), b.astype(np.int64)  # the same integers, one trace wider
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"result {number} is {a.dtype}{list(a.shape)} where the recorded trace gave {b.dtype}{list(b.shape)}"
        if a.tobytes() == b.tobytes():
            continue
        if exact or a.dtype.kind not in "fc" or not _last_digits(np, a, b):
            return f"result {number} differs"
    return None


def _last_digits(np: Any, a: Any, b: Any) -> bool:
    """Equal but for the last digits: the same non-finite values in the same places, the rest within the rule."""
    finite = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(a[~finite & ~np.isnan(a)],
                                                                        b[~finite & ~np.isnan(b)]):
        return False
    if not finite.any():
        return True
    scale = float(np.max(np.abs(b[finite])))
    return bool(np.all(np.abs(a[finite] - b[finite]) <= _RELATIVE * scale))
