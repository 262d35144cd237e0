"""Warm-up through TensorFlow's public API: who a tf.function is, its call's signature, one general trace."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tfretrace._tf.counters import warming
from tfretrace._tf.frames import call_site, innermost_code, short_path
from tfretrace._tf.keras import KERAS_ROLES, is_keras_functions_file, keras_info, layer_names
from tfretrace._tf.types import signature_leaves
from tfretrace.records.events import CONTAINERS, PYTHON, SPEC, TENSOR, KerasInfo, Leaf
from tfretrace.records.function_key import FunctionKey, code_key, keras_key


class NotWarmable(Exception):
    """A recorded signature that cannot be rebuilt as arguments (an object, an iterator, a namedtuple)."""


@dataclass(frozen=True)
class Identity:
    """What a live tf.function is, in the terms a saved session uses."""

    name: str
    location: str
    key: FunctionKey | None
    keras: KerasInfo | None
    params: tuple[str, ...]
    jit_compile: bool
    reduce_retracing: bool


def identify(function: Any, frame: Any, root: str) -> Identity:
    """Read a tf.function object's name, place, key (relative to ``root``) and Keras model and role."""
    code, qualname = innermost_code(function._python_function)
    location = f"{short_path(code.co_filename)}:{code.co_firstlineno}" if code is not None else "<unknown>"
    keras: KerasInfo | None = None
    key = None if code is None else code_key(code, qualname, root)
    if code is not None and is_keras_functions_file(code.co_filename):
        keras, model = keras_info(frame, code)
        if keras is not None:
            role = KERAS_ROLES.get(keras.method, keras.method)
            key = keras_key(keras.built_at, keras.model_class, role, layer_names(model), root)
    params = tuple(getattr(function._function_type, "parameters", {}))
    return Identity(
        name=qualname,
        location=location,
        key=key,
        keras=keras,
        params=params,
        jit_compile=bool(getattr(function, "_jit_compile", False)),
        reduce_retracing=bool(getattr(function, "_reduce_retracing", False)),
    )


def definition(function: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def the tf.function traces, parsed from its source file; None where it cannot be read."""
    code, _ = innermost_code(function._python_function)
    if code is None:
        return None
    try:
        lines, _ = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndexError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def eager() -> bool:
    """Whether the call runs eagerly (not inside another function's trace)."""
    import tensorflow as tf

    return bool(tf.executing_eagerly())


def tracing_count(function: Any) -> int:
    """TensorFlow's own count of the traces in this tf.function object's cache."""
    return int(function.experimental_get_tracing_count())


def call_key(args: tuple[Any, ...], kwds: dict[str, Any]) -> tuple[Any, ...]:
    """A cheap key of a call: shapes and dtypes of its tensors, the type of everything else.

    Two calls with the same key have the same tensor shapes; the full signature is read only for
    a key not seen before, so a warmed function pays a few microseconds per call.
    """
    import tensorflow as tf

    out: list[Any] = []
    for value in tf.nest.flatten((args, kwds)):
        shape = getattr(value, "shape", None)
        if shape is not None and hasattr(value, "dtype"):
            out.append((tuple(shape), str(value.dtype)))
        elif isinstance(value, (int, float, bool, str, type(None))):
            out.append((type(value).__name__, value))
        else:
            # A composite value (PerReplica, a ragged tensor) by its spec, which holds its shapes;
            # anything else by identity, as TensorFlow keys it.
            spec = getattr(value, "_type_spec", None)
            try:
                out.append(("spec", spec, hash(spec)) if spec is not None else id(value))
            except TypeError:
                out.append(id(value))
    return tuple(out)


def call_signature(function: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> tuple[Leaf, ...]:
    """The leaves of the cache key TensorFlow looks up for this call (what a trace would record)."""
    from tensorflow.python.eager.polymorphic_function import function_type_utils as ftu

    bound = ftu.canonicalize_function_inputs(args, kwds, function._function_type, function._default_values)
    lookup, _ = ftu.make_canonicalized_monomorphic_type(bound.args, bound.kwargs, {}, function._function_type)
    return tuple(signature_leaves(lookup))


def warm(function: Any, signature: Sequence[Leaf]) -> float:
    """Trace one concrete function for ``signature`` (open dims as None) and return its seconds.

    Only ``get_concrete_function``: TensorFlow adds the trace to the function's own cache, and its
    subtype lookup serves every narrower call from it. No input_signature is set, so a call the
    signature does not cover traces as it always would.
    """
    args, kwargs = rebuild(function, signature)
    start = time.perf_counter()
    with function._lock:
        # A failed first trace leaves the function half initialized (its next call would return
        # None): put TensorFlow's fields back so the user's call initializes it as it would have.
        saved = _first_call_state(function)
        try:
            # Its traces are marked as the warm-up's: expected, never counted as retraces.
            with warming():
                function.get_concrete_function(*args, **kwargs)
        except Exception:
            if saved is not None:
                _restore(function, saved)
            raise
    return time.perf_counter() - start


def initialize(function: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> float:
    """TensorFlow's own first step, with the call's own arguments, for a function that creates variables.

    The variable-creating trace must see the call's arguments: a general trace that failed there
    would leave the user's objects holding variables that were never initialized. What the
    function traces after this (the no-variable-creation trace) is where the general warm-up
    goes. Returns the seconds; 0.0 when the function was already initialized. On an error the
    fields are put back and the error raised: the user's call then meets it itself.
    """
    with function._lock:
        saved = _first_call_state(function)
        if saved is None:
            return 0.0
        start = time.perf_counter()
        initializers: list[Any] = []
        try:
            function._initialize(args, kwds, add_initializers_to=initializers)
            function._initialize_uninitialized_variables(initializers)
        except Exception:
            _restore(function, saved)
            raise
        return time.perf_counter() - start


_FIRST_CALL_FIELDS = (
    "_variable_creation_config", "_no_variable_creation_config", "_created_variables",
    "_concrete_variable_creation_fn",
)


def _first_call_state(function: Any) -> dict[str, Any] | None:
    """TensorFlow's first-call fields of a function not yet initialized; None once it is."""
    if getattr(function, "_variable_creation_config", None) is not None:
        return None
    return {name: function.__dict__.get(name) for name in _FIRST_CALL_FIELDS}


def _restore(function: Any, saved: dict[str, Any]) -> None:
    for name, value in saved.items():
        setattr(function, name, value)


def rebuild(function: Any, signature: Sequence[Leaf]) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for get_concrete_function: a TensorSpec per tensor, the recorded Python values."""
    import tensorflow as tf

    by_path = {leaf.path: leaf for leaf in signature}
    parameters = function._function_type.parameters
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, parameter in parameters.items():
        if name not in by_path:
            raise NotWarmable(f"parameter {name} was not recorded")
        value = _value(by_path[name], by_path, tf)
        if parameter.kind == inspect.Parameter.KEYWORD_ONLY:
            kwargs[name] = value
        elif parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            if kwargs:
                raise NotWarmable(f"parameter {name} follows a keyword")
            args.append(value)
        else:
            raise NotWarmable(f"parameter {name} is variadic")
    return args, kwargs


def _value(leaf: Leaf, by_path: dict[str, Leaf], tf: Any) -> Any:
    if leaf.kind == TENSOR:
        shape = None if leaf.shape is None else list(leaf.shape)
        return tf.TensorSpec(shape=shape, dtype=tf.as_dtype(leaf.dtype))
    if leaf.kind == PYTHON:
        if leaf.extra:
            raise NotWarmable(f"{leaf.path}: the recorded value was cut")
        try:
            return ast.literal_eval(leaf.value or "")
        except (ValueError, SyntaxError):
            raise NotWarmable(f"{leaf.path}: {leaf.type_name} value {leaf.value} cannot be rebuilt") from None
    if leaf.kind == SPEC and leaf.type_name == "PerReplicaSpec" and (leaf.value or "").startswith("PerReplicaSpec of "):
        # Distributed values (a distributed dataset's batches): one spec per replica, each rebuilt.
        from tensorflow.python.distribute import values as distribute_values

        replicas = int((leaf.value or "").rsplit(" ", 1)[1])
        parts = [by_path.get(f"{leaf.path}.replica[{i}]") for i in range(replicas)]
        if any(part is None for part in parts):
            raise NotWarmable(f"{leaf.path}: a replica's spec was not recorded")
        return distribute_values.PerReplicaSpec(*(_value(p, by_path, tf) for p in parts if p is not None))
    if leaf.kind == SPEC and leaf.type_name == "IteratorSpec" and f"{leaf.path}.element_spec" in by_path:
        # A tf.data iterator (Keras' fit/evaluate loop on one device): keyed by its element spec.
        return tf.data.IteratorSpec(_value(by_path[f"{leaf.path}.element_spec"], by_path, tf))
    if leaf.kind not in CONTAINERS or leaf.kind not in ("list", "tuple", "dict"):
        raise NotWarmable(f"{leaf.path}: a {leaf.type_name or leaf.kind} needs the live object")
    kids = [k for p, k in by_path.items() if _is_child(leaf.path, p)]
    values = [_value(k, by_path, tf) for k in kids]
    if leaf.kind == "list":
        return values
    if leaf.kind == "tuple":
        return tuple(values)
    out = {}
    for kid, value in zip(kids, values):
        text = kid.path[len(leaf.path) + 1 : -1]
        try:
            out[ast.literal_eval(text)] = value
        except (ValueError, SyntaxError):
            raise NotWarmable(f"{kid.path}: dict key cannot be rebuilt") from None
    return out


def _is_child(parent: str, path: str) -> bool:
    rest = path[len(parent) :]
    if not path.startswith(parent) or not rest.startswith("[") or not rest.endswith("]"):
        return False
    inner = rest[1:-1]
    # A direct child: one bracketed part, no deeper index after it.
    depth = 0
    quote: str | None = None
    for char in inner:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and "][" not in inner


def caller_frame() -> Any:
    """The call hook's frame (above the watcher, its dispatcher and the first-call step)."""
    return sys._getframe(4)


def user_site() -> str | None:
    """``path:line`` of the user's call that reached the watcher (the innermost frame outside tfretrace and TF)."""
    return call_site(sys._getframe(1))
