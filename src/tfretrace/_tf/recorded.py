"""A recorded trace's arguments as they can be passed again: live objects put back, one element replaced."""

from __future__ import annotations

import ast
from typing import Any


def recorded_arguments(trace: Any) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """``trace.structured_input_signature`` with each object argument (a model, an optimizer, a loss
    function passed in) the object itself; None where one cannot be had.

    TensorFlow writes an ``UnknownArgument`` into a trace's signature for any argument it keyed by
    identity, and keeps a weak reference to that object in the parameter's type (``Weakref``): the
    trace's own key. Where the object is still alive it is the one the trace was made for, so the
    probes and the comparisons can pass it again. A nested one (an object inside a tuple), a dead
    reference or a TensorFlow without ``function_type`` leaves the trace unreplayable, as before.
    """
    import tensorflow as tf
    from tensorflow.python.framework.func_graph import UnknownArgument

    args, kwargs = trace.structured_input_signature
    args, kwargs = tuple(args), dict(kwargs)
    if not _unknown(tf, UnknownArgument, (args, kwargs)):
        return args, kwargs
    try:
        parameters = list(trace.function_type.parameters.values())
    except Exception:  # an older TensorFlow, or a trace without a function type
        return None
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in parameters}
    made = []
    for number, value in enumerate(args):
        if isinstance(value, UnknownArgument):
            value = _live(positional[number] if number < len(positional) else None)
        made.append(value)
    named = {k: _live(by_name.get(k)) if isinstance(v, UnknownArgument) else v for k, v in kwargs.items()}
    if any(v is _GONE for v in (*made, *named.values())) or _unknown(tf, UnknownArgument, (made, named)):
        return None
    return tuple(made), named


# An object the trace keyed by identity that is gone (or was never a weak reference).
_GONE = object()


def _live(parameter: Any) -> Any:
    constraint = getattr(parameter, "type_constraint", None)
    ref = getattr(constraint, "_ref", None)  # default_types.Weakref: the trace's key
    if not callable(ref):
        return _GONE
    found = ref()
    return found if found is not None and _passable(found) else _GONE


def _passable(value: Any) -> bool:
    """Whether an object argument may be passed to the body again once the program has ended.

    Tracing runs the body's Python, and the body may call the object's methods: a TensorFlow object (a
    Keras model, layer or optimizer, a ``tf.Module``: trackable, its state in variables that the
    comparison restores), a function, or an object of a TensorFlow or Keras class (a loss) keeps that to
    what tracing does anyway. An open file, a logger, a generator or another Python object would get
    the calls the program never made (a line written into the program's file): not passed, not asked.
    """
    import types

    import tensorflow as tf

    if isinstance(value, (tf.__internal__.tracking.Trackable, types.FunctionType)):
        return True
    if isinstance(value, (types.MethodType, types.BuiltinFunctionType)):
        # A method is its object's: ``log.write`` given as an argument writes into the program's file.
        owner = getattr(value, "__self__", None)
        return owner is None or isinstance(owner, types.ModuleType) or _passable(owner)
    module = type(value).__module__ or ""
    return module.split(".")[0] in ("tensorflow", "keras", "tf_keras")


def _unknown(tf: Any, unknown: type, structure: Any) -> bool:
    return any(isinstance(x, unknown) for x in tf.nest.flatten(structure))


def split_path(param: str) -> tuple[str, int | str | None]:
    """``("data", 1)`` for ``data[1]``, ``("hp", "lr")`` for ``hp['lr']`` (one level); ``(param, None)`` for itself."""
    head, bracket, rest = param.partition("[")
    if not bracket:
        return param, None
    try:
        key = ast.literal_eval(rest[:-1]) if rest.endswith("]") and "[" not in rest else None
    except (ValueError, SyntaxError):
        key = None
    # Anything deeper or stranger names no element the probe can replace: it is not asked.
    return head, key if isinstance(key, (int, str)) and not isinstance(key, bool) else ""


def holds(value: Any, key: int | str | None) -> bool:
    """Whether the recorded argument has ``key`` (a plain tuple, list or dict of it), or is the parameter itself."""
    if key is None:
        return True
    if type(value) is dict:
        return key in value
    return type(value) in (tuple, list) and isinstance(key, int) and 0 <= key < len(value)


def part(value: Any, key: int | str | None) -> Any:
    """The recorded argument's element ``key`` (the argument itself for a parameter)."""
    return value if key is None else value[key]


def with_part(value: Any, key: int | str | None, new: Any) -> Any:
    """The recorded argument with its element ``key`` replaced by ``new`` (the whole of it for a parameter)."""
    if key is None:
        return new
    if type(value) is dict:
        return {**value, key: new}
    items = list(value)
    items[key] = new  # type: ignore[index]
    return type(value)(items)
