"""TraceType to leaves: turning TensorFlow's cache-key types into plain Leaf records."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from tfretrace._tf.frames import static_attr, truncate
from tfretrace.records.events import BY_TYPE, LITERAL_RULE, OBJECT, PYTHON, SPEC, TENSOR, VARIABLE, Leaf

_collect = threading.local()


def signature_with_refs(function_type: Any) -> tuple[tuple[Leaf, ...], tuple[tuple[str, Any], ...]]:
    """The leaves of a FunctionType, and (path, weakref) of each argument keyed by identity."""
    _collect.refs = {}
    try:
        signature = tuple(signature_leaves(function_type))
        object_refs = tuple(_collect.refs.items())
    finally:
        _collect.refs = None
    return signature, object_refs


def signature_leaves(function_type: Any) -> Iterator[Leaf]:
    """One leaf per tensor, Python value, object or container in a FunctionType's parameters.

    Never raises for what the user passed: a TraceType that cannot be read (its __repr__ or a
    property raises) becomes one opaque leaf, and a path seen twice (a dict with two NaN keys)
    gets a ``#2`` suffix so that every path names one leaf.
    """
    seen: set[str] = set()
    for name, parameter in function_type.parameters.items():
        constraint = parameter.type_constraint
        try:
            leaves = list(_describe(constraint, name))
        except Exception as exc:  # a user-defined TraceType: its code may raise
            leaves = [Leaf(name, SPEC, value=f"<unreadable: {type(exc).__name__}>",
                           type_name=type(constraint).__name__)]
        for leaf in leaves:
            path, number = leaf.path, 1
            while path in seen:
                number += 1
                path = f"{leaf.path}#{number}"
            seen.add(path)
            yield leaf if path == leaf.path else replace(leaf, path=path)


def leaves_of(trace_type: Any, path: str) -> list[Leaf]:
    """The leaves of one TraceType at ``path`` (what a parameter of that type records)."""
    return list(_describe(trace_type, path))


def _describe(trace_type: Any, path: str) -> Iterator[Leaf]:
    cls = type(trace_type).__name__
    if cls in ("TensorSpec", "VariableSpec"):
        yield _tensor_leaf(trace_type, path)
    elif cls == "Literal":
        leaf = _python_leaf(_literal_value(trace_type), path)
        # TF 2.23 (nightly) Literals match only values of the same type and sign (1, 1.0 and
        # True trace apart); up to 2.21 they match equal values. The leaf says which rule made
        # it, so a plan replays the rule of the TensorFlow that recorded the session.
        yield replace(leaf, extra=(*leaf.extra, (LITERAL_RULE, BY_TYPE))) if _keyed_by_type(trace_type) else leaf
    elif cls == "Weakref":
        yield _object_leaf(trace_type._ref, path)
    elif cls == "TensorArrayTraceType":
        # Keyed by the TensorArray object itself: a new TensorArray per call retraces.
        yield _object_leaf(lambda: trace_type._value, path, weak=False)
    elif cls in ("Tuple", "List"):
        items = trace_type.components_tuple.components if cls == "List" else trace_type.components
        yield Leaf(path, cls.lower(), value=f"of len {len(items)}", type_name=cls.lower())
        for number, item in enumerate(items):
            yield from _describe(item, f"{path}[{number}]")
    elif cls == "Dict":
        keys = list(trace_type.mapping)
        yield Leaf(path, "dict", value=f"with keys {short_repr(keys)}", type_name="dict")
        for key in keys:
            yield from _describe(trace_type.mapping[key], f"{path}[{short_repr(key, 40)}]")
    elif cls in ("NamedTuple", "Attrs"):
        inner = trace_type.named_attributes if cls == "Attrs" else trace_type
        names = inner.attribute_names
        yield Leaf(path, cls.lower(), value=f"with fields {tuple(names)}", type_name=inner.type_name)
        for name, item in zip(names, inner.attributes.components):
            yield from _describe(item, f"{path}.{name}")
    else:
        yield from _describe_spec(trace_type, path)


def _describe_spec(spec: Any, path: str) -> Iterator[Leaf]:
    fields = getattr(type(spec), "_tf_extension_type_fields", None)
    if callable(fields):
        # An ExtensionType: one leaf for the type, then its fields, so that a field's shape or
        # dtype change reads as one (and reduce_retracing generalizes it like a tensor's).
        names = [field.name for field in fields()]
        values = vars(spec)
        name = type(spec).__qualname__
        yield Leaf(path, SPEC, value=f"{name} with fields {tuple(names)}", type_name=name)
        for field_name in names:
            if field_name in values:
                yield from _describe_nest(values[field_name], f"{path}.{field_name}")
        return
    element_spec = getattr(spec, "_element_spec", None)
    if element_spec is not None:
        # tf.data iterators are keyed by their element spec: show its tensors.
        yield Leaf(path, SPEC, value=type(spec).__name__, type_name=type(spec).__name__)
        yield from _describe_nest(element_spec, f"{path}.element_spec")
        return
    value_specs = getattr(spec, "_value_specs", None)
    if isinstance(value_specs, tuple):
        # Distributed values (PerReplica): one spec per replica; show each replica's tensors so a
        # shape change reads as one, not as an opaque spec change.
        name = type(spec).__name__
        yield Leaf(path, SPEC, value=f"{name} of {len(value_specs)}", type_name=name)
        for number, item in enumerate(value_specs):
            yield from _describe_nest(item, f"{path}.replica[{number}]")
        return
    shape = getattr(spec, "shape", None)
    dtype = getattr(spec, "dtype", None)
    text, extra = _exact_repr(spec)
    yield Leaf(
        path,
        SPEC,
        dtype=getattr(dtype, "name", None),
        shape=_shape(shape) if shape is not None else None,
        value=text,
        type_name=type(spec).__name__,
        extra=extra,
    )


def _describe_nest(value: Any, path: str) -> Iterator[Leaf]:
    if isinstance(value, dict):
        yield Leaf(path, "dict", value=f"with keys {short_repr(list(value))}", type_name="dict")
        for key, item in value.items():
            yield from _describe_nest(item, f"{path}[{short_repr(key, 40)}]")
    elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        kind = "list" if isinstance(value, list) else "tuple"
        yield Leaf(path, kind, value=f"of len {len(value)}", type_name=kind)
        for number, item in enumerate(value):
            yield from _describe_nest(item, f"{path}[{number}]")
    elif type(value).__name__ == "TensorSpec":
        yield _tensor_leaf(value, path)
    elif value is None or isinstance(value, (bool, int, float, str, bytes)):
        yield _python_leaf(value, path)
    else:
        yield from _describe_spec(value, path)


def _tensor_leaf(spec: Any, path: str) -> Leaf:
    is_variable = type(spec).__name__ == "VariableSpec"
    extra: tuple[tuple[str, str], ...] = ()
    if is_variable:
        extra = (("alias_id", str(spec.alias_id)), ("trainable", str(spec.trainable)))
    return Leaf(
        path,
        VARIABLE if is_variable else TENSOR,
        dtype=spec.dtype.name,
        shape=_shape(spec.shape),
        extra=extra,
    )


def _shape(shape: Any) -> tuple[int | None, ...] | None:
    if shape.rank is None:
        return None
    return tuple(shape.as_list())


def _keyed_by_type(literal: Any) -> bool:
    return "_value_type" in getattr(literal, "__dict__", {})


def _literal_value(literal: Any) -> Any:
    # A NaN Literal holds a bare object() marker in .value (NaNs match each other); the NaN it
    # was made from is kept beside it from TF 2.23 on, and is a float NaN before.
    value = literal.value
    if type(value) is object:
        return literal.__dict__.get("_nan_value", float("nan"))
    return value


def _python_leaf(value: Any, path: str) -> Leaf:
    text, extra = _exact_repr(value)
    return Leaf(path, PYTHON, value=text, type_name=type(value).__name__, extra=extra)


# Shown values are cut to this many characters; longer ones also carry a hash of the full
# text, so two values that differ only past the cut still compare unequal.
VALUE_LIMIT = 80


def _exact_repr(value: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A short repr that keeps both ends, and, when it was cut, a hash of the full repr."""
    try:
        full = repr(value)
    except Exception:  # a user __repr__ may raise; never let it break tracing
        return f"<{type(value).__name__} (repr failed)>", ()
    if len(full) <= VALUE_LIMIT:
        return full, ()
    digest = hashlib.blake2b(full.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    half = (VALUE_LIMIT - 3) // 2
    return f"{full[:half]}...{full[-half:]}", (("repr_hash", digest),)


def _object_leaf(ref: Any, path: str, *, weak: bool = True) -> Leaf:
    refs = getattr(_collect, "refs", None)
    if refs is not None and weak:
        refs[path] = ref
    target = ref()
    if target is None:
        return Leaf(path, OBJECT, value="<collected>", type_name="?", ident=None, alive=False)
    cls = type(target)
    label = f" name={static_name(target)!r}" if static_name(target) is not None else ""
    compares = "identity" if static_attr(cls, "__eq__") is static_attr(object, "__eq__") else "eq"
    return Leaf(
        path,
        OBJECT,
        value=f"<{cls.__name__}{label} at {id(target):#x}>",
        type_name=cls.__name__,
        ident=id(target),
        alive=True,
        extra=(("compared_by", compares), ("module", str(static_attr(cls, "__module__")))),
    )


def static_name(target: Any) -> str | None:
    """The object's ``name`` (or Keras' ``_name``) if stored as plain data: no property runs."""
    for attribute in ("name", "_name"):
        value = static_attr(target, attribute)
        if isinstance(value, str):
            return value
    return None


def short_repr(value: Any, limit: int = 80) -> str:
    """repr(value), cut to ``limit``; never raises (a user __repr__ may)."""
    try:
        text = repr(value)
    except Exception:  # a user __repr__ may raise; never let it break tracing
        text = f"<{type(value).__name__} (repr failed)>"
    return truncate(text, limit)
