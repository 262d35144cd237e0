"""TensorFlow's tracing rules on recorded signatures: which trace covers a call, and what reduce_retracing makes.

These mirror TF 2.21's TraceType semantics, read from its source:
- ``TypeDispatchTable.dispatch`` (core/function/polymorphism/type_dispatch.py): a call reuses a
  cached trace when the trace's type is a supertype of the call's type, parameter by parameter.
- ``TensorSpec`` / ``VariableSpec`` (TypeSpec subtyping over the serialized spec): same dtype, same
  rank unless the trace has unknown rank, every dimension equal unless the trace has None there;
  a VariableSpec also needs the same ``trainable`` flag and ``alias_id``.
- ``Literal`` (default_types.py): equal values only (``1 == 1.0 == True``); never generalized.
  TF 2.23 also requires the same type and sign; leaves recorded there say so (``literal_key``).
- ``Weakref``: the same live object. Containers: the same kind and length/keys, children by path.
- ``try_generalizing_function_type``: reduce_retracing folds ``most_specific_common_supertype``
  of the request with every cached trace of the same context, skipping those with none.
A rule this module does not know (an opaque TypeSpec) answers "equal only", and the plan then
checks itself against the traces really recorded before predicting anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from tfretrace.records.events import BY_TYPE, CONTAINERS, LITERAL_RULE, OBJECT, PYTHON, SPEC, TENSOR, VARIABLE, Leaf

Signature = tuple[Leaf, ...]
Shape = tuple[int | None, ...] | None

_NUMERIC = {"int", "float", "bool"}


def literal_key(leaf: Leaf) -> object:
    """The value TF's Literal compares.

    Up to TF 2.21, numbers by value (``1 == 1.0 == True``, and every NaN alike), the rest by repr;
    from 2.23, every value by type and repr (the repr tells -0.0 from 0.0).
    """
    if leaf.type_name in _NUMERIC and leaf.value is not None and (LITERAL_RULE, BY_TYPE) not in leaf.extra:
        text = leaf.value
        if text in ("True", "False"):
            return ("num", 1.0 if text == "True" else 0.0)
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            return ("num", "nan" if number != number else number)
    # Long values are shown cut, with a hash of the whole text in ``extra``: compare both.
    return (leaf.type_name, leaf.value, leaf.extra)


def shape_covers(trace: Shape, call: Shape) -> bool:
    """True when a trace of shape ``trace`` accepts a call of shape ``call``."""
    if trace is None:
        return True
    if call is None or len(trace) != len(call):
        return False
    return all(t is None or t == c for t, c in zip(trace, call))


def common_shape(a: Shape, b: Shape) -> Shape:
    """TensorShape.most_specific_common_supertype: unknown rank if ranks differ, else None where dims differ."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def leaf_covers(trace: Leaf, call: Leaf) -> bool:
    """True when the traced leaf accepts the call's leaf at the same path."""
    if trace.kind != call.kind:
        return False
    kind = call.kind
    if kind in (TENSOR, VARIABLE):
        return trace.dtype == call.dtype and trace.extra == call.extra and shape_covers(trace.shape, call.shape)
    if kind == PYTHON:
        return literal_key(trace) == literal_key(call)
    if kind == OBJECT:
        return trace.ident is not None and trace.ident == call.ident and call.alive is not False
    if kind in CONTAINERS:
        return trace.type_name == call.type_name and trace.value == call.value
    if kind == SPEC:
        return _spec_covers(trace, call)
    return trace == call


def _spec_covers(trace: Leaf, call: Leaf) -> bool:
    if trace.type_name != call.type_name:
        return False
    if trace.dtype is not None or call.dtype is not None:
        # A plain spec described by dtype and shape (its repr includes the shape, so do not
        # compare the repr): TypeSpec subtyping over its serialization.
        return trace.dtype == call.dtype and shape_covers(trace.shape, call.shape)
    return trace.value == call.value and trace.extra == call.extra


def covers(trace: Sequence[Leaf], call: Sequence[Leaf]) -> bool:
    """True when a trace of signature ``trace`` serves a call of signature ``call``."""
    if len(trace) != len(call):
        return False
    return all(t.path == c.path and leaf_covers(t, c) for t, c in zip(trace, call))


def common_leaf(a: Leaf, b: Leaf) -> Leaf | None:
    """The most specific leaf covering both, or None when TF has no common supertype."""
    if a.kind != b.kind or a.path != b.path:
        return None
    if a.kind in (TENSOR, VARIABLE):
        if a.dtype != b.dtype or a.extra != b.extra:
            return None
        return (
            a
            if a.shape == b.shape
            else Leaf(a.path, a.kind, dtype=a.dtype, shape=common_shape(a.shape, b.shape), extra=a.extra)
        )
    if a.kind == SPEC and (a.dtype is not None or b.dtype is not None):
        if a.type_name != b.type_name or a.dtype != b.dtype:
            return None
        shape = common_shape(a.shape, b.shape)
        return (
            a if shape == a.shape else Leaf(a.path, SPEC, dtype=a.dtype, shape=shape, value=None, type_name=a.type_name)
        )
    return a if leaf_covers(a, b) and leaf_covers(b, a) else None


def common_signature(a: Sequence[Leaf], b: Sequence[Leaf]) -> Signature | None:
    """FunctionType.most_specific_common_subtype for two signatures (None when any leaf has none)."""
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        leaf = common_leaf(x, y)
        if leaf is None:
            return None
        out.append(leaf)
    return tuple(out)


def generalize(request: Sequence[Leaf], cached: Sequence[Sequence[Leaf]]) -> Signature:
    """What reduce_retracing traces for ``request``: folded with every cached trace that allows it."""
    relaxed = tuple(request)
    for other in cached:
        merged = common_signature(relaxed, other)
        if merged is not None:
            relaxed = merged
    return relaxed


def fold_all(signatures: Sequence[Sequence[Leaf]]) -> Signature | None:
    """One signature covering all of them (dims that varied open), or None when none exists."""
    if not signatures:
        return None
    general: Signature | None = tuple(signatures[0])
    for signature in signatures[1:]:
        if general is None:
            return None
        general = common_signature(general, signature)
    return general
