"""Whether a traced graph uses a Python value only as data: the recorded graph against the one traced with a tensor.

A Python number passed to a ``tf.function`` is part of the cache key, and each trace folds it into
its graph as constants. Passed as a tensor instead, the same body gives one graph for every value.
That graph computes what each recorded one did exactly when the two are the same graph but for
where the value enters: the recorded trace's constants equal to the value, the new trace's
placeholder for the argument. Anything else shows that the body's Python looked at the value while
tracing (a Python ``if``, arithmetic done in Python before the graph saw it, a ``smart_cond`` that
picked a branch, a shape built from it) and so that the graph depends on the value: the two are
then not the same computation, whatever their outputs' shapes say.
"""

from __future__ import annotations

from typing import Any

# Attributes that differ between two traces of the same code: op-level random seeds follow the
# graph's op count, and resource names are made unique per graph.
_NOISY = frozenset({"seed", "seed2", "shared_name", "container"})

_VALUE = ("value",)


def value_only_as_data(recorded: Any, tensor: Any, param: str, value: Any) -> str | None:
    """None where ``tensor`` (the body traced with ``param`` a placeholder) is ``recorded`` with the value as data.

    ``recorded``: the FuncGraph of a trace of the run, made with ``value`` a Python value;
    ``tensor``: the FuncGraph of the same body and arguments with ``param`` a tensor. Otherwise one
    line saying where the two graphs part.
    """
    import numpy as np

    try:
        ours = _canonical(tensor, param)
        theirs = _canonical(recorded, None)
    except Exception as exc:  # a graph this TensorFlow lays out otherwise: not shown to be the same
        return f"the graphs could not be compared ({type(exc).__name__})"
    if ours is None or theirs is None:
        return "the graphs could not be read to compare"
    if len(ours) != len(theirs):
        return f"the trace with it as a tensor has {len(ours)} operations where the recorded one had {len(theirs)}"
    wanted = np.asarray(value)

    def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        # Where the tensor's trace reads the argument, the recorded one must read a constant of its value.
        if a == _VALUE and len(b) == 4 and b[0] == "constant" and b[2] == wanted.shape:
            return bool(np.dtype(b[1]).kind in "biuf" and wanted.astype(b[1]).tobytes() == b[3])
        return a == b

    for number, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a[0] != b[0]:
            return f"operation {number} is {a[0]} where the recorded trace had {b[0]}"
        if a[2] != b[2] or len(a[1]) != len(b[1]) or not all(map(same, a[1], b[1])):
            return f"operation {number} ({a[0]}) reads other inputs, or runs another body, than the recorded one"
    return None


def _canonical(graph: Any, param: str | None) -> list[tuple[Any, ...]] | None:
    """The graph's operations in order, leaves (arguments, constants) given by what they are, not by name.

    ``param``: the placeholder that is the value (the tensor's trace). Operations are described by
    type, inputs and attributes: an input is a leaf's description or the position of the operation
    that made it.
    """
    from tensorflow.python.framework import tensor_util

    leaves: dict[str, tuple[Any, ...]] = {}
    place: dict[str, int] = {}
    found: list[tuple[Any, ...]] = []
    for op in graph.get_operations():
        if op.type == "Placeholder":
            leaves[op.name] = _VALUE if op.name == param else ("argument", op.get_attr("dtype").name)
            continue
        if op.type == "Const":
            try:
                array = tensor_util.MakeNdarray(op.get_attr("value"))
            except Exception:  # a constant numpy cannot hold (a resource, a variant): compared by type
                leaves[op.name] = ("constant", op.get_attr("dtype").name)
                continue
            # A string constant's array holds Python objects: its bytes would be their addresses.
            content = tuple(array.ravel().tolist()) if array.dtype.kind == "O" else array.tobytes()
            leaves[op.name] = ("constant", array.dtype.str, array.shape, content)
            continue
        inputs = []
        for tensor in op.inputs:
            producer = tensor.op.name
            if producer in leaves:
                inputs.append(leaves[producer])
            elif producer in place:
                inputs.append(("operation", place[producer], tensor.value_index))
            else:
                return None  # an input made outside this graph's list: not comparable
        place[op.name] = len(found)
        found.append((op.type, tuple(inputs), _attributes(op)))
    return found


def _attributes(op: Any) -> tuple[tuple[str, Any], ...]:
    """The attributes that say what an operation computes, not its names; a branch or loop body by its contents."""
    return _attribute_map(op.graph, op.node_def.attr, 0)


def _attribute_map(graph: Any, attrs: Any, depth: int) -> tuple[tuple[str, Any], ...]:
    kept: list[tuple[str, Any]] = []
    for name, value in sorted(attrs.items()):
        if name.startswith("_") or name in _NOISY:
            continue
        kind = value.WhichOneof("value")
        if kind in ("i", "f", "b", "type", "s"):
            kept.append((name, getattr(value, kind)))
        elif kind == "func":
            # A tf.cond branch or a while body is a function the graph holds: compared by what it computes.
            kept.append((name, _function(graph, value.func.name, depth)))
        elif kind == "list" and value.list.func:
            kept.append((name, tuple(_function(graph, f.name, depth) for f in value.list.func)))
        elif kind in ("shape", "tensor", "list"):
            kept.append((name, getattr(value, kind).SerializeToString()))
    return tuple(kept)


# Functions nested deeper than this are compared by name: a body's body's body is left to its outer ops.
_MAX_DEPTH = 8


def _function(graph: Any, name: str, depth: int) -> Any:
    """A nested function's nodes in order (type, inputs, attributes), its arguments by dtype."""
    found = graph._get_function(name) if depth < _MAX_DEPTH else None
    definition = getattr(found, "definition", None)
    if definition is None:
        return ("function", name)
    nodes = tuple(
        (node.op, tuple(node.input), _attribute_map(graph, node.attr, depth + 1)) for node in definition.node_def
    )
    return (tuple(arg.type for arg in definition.signature.input_arg), nodes)
