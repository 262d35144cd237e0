"""Reading one trace: the hook's arguments and the caller's frame become a plain RawTrace."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from tfretrace._tf.counters import counter_born, counter_of, note_nested_trace, token_of
from tfretrace._tf.frames import call_site, innermost_code, is_library_file, owner_function, short_path, user_site
from tfretrace._tf.keras import (
    KERAS_ROLES,
    keras_info,
    layer_names,
    mark_trained,
    model_group,
    was_loaded,
    was_trained,
)
from tfretrace._tf.origins import DATA, EXPORT, Origin, saving
from tfretrace._tf.types import short_repr, signature_leaves, signature_with_refs
from tfretrace.records.events import KerasInfo, Leaf
from tfretrace.records.function_key import FunctionKey, code_key, keras_key, module_of_path


@dataclass(frozen=True)
class RawTrace:
    """What the adapter read about one trace, as plain data (no references to user objects)."""

    key: tuple[str, int, str]
    name: str
    location: str
    token: int
    signature: tuple[Leaf, ...]
    traced_as: tuple[Leaf, ...] | None
    context: tuple[tuple[str, str], ...]
    call_site: str | None
    thread: str
    keras: KerasInfo | None
    # The cache key's repr costs more than the rest of the reading: it is built only when a trace
    # is unexplained. Holds the key objects (TensorFlow types, with weak references to arguments).
    raw_key: Callable[[], str]
    counter: Any
    nested: bool
    owner_ref: Any = None
    model_ref: Any = None
    model_loaded: bool = False
    counter_born: float = 0.0
    # (path, weakref) of arguments keyed by identity: an earlier trace whose object has died can
    # never match again (TensorFlow's Weakref type), even if a new object reuses its address.
    object_refs: tuple[tuple[str, Any], ...] = ()
    # Keras: the role (train, test, predict) and whether the model had trained before this trace.
    role: str | None = None
    model_trained: bool = False
    # Framework code traced for one of the user's calls (tfretrace._tf.origins): its kind; and
    # whether the trace is made to write a SavedModel (tf.saved_model.save, model.export).
    origin: str | None = None
    saving: bool = False
    # The function's key across runs, relative to a root folder (tfretrace.records.function_key): made
    # on demand, once per function, since reading its source costs more than a cached call.
    function_key: Callable[[str], FunctionKey | None] = lambda root: None
    # A tf.data function: what its pipeline is built from (see data_source), None if unknown.
    data_source: str | None = None
    # A library's own tf.function (its code in an installed package): the user's line that made
    # the library trace it; None for the user's own functions, Keras models and framework rows.
    library_site: str | None = None


def read_trace(
    function_type: Any, options: Any, caller: FrameType, nested: bool, origin: Origin | None = None
) -> RawTrace:
    """Turn the trace hook's arguments and the caller's frame into a RawTrace.

    ``origin``: the code is TensorFlow's or Keras', traced for that call of the user's; the row
    is the call's, named as the user wrote it and placed at the user's line.
    """
    owner = owner_function(caller, options.function_cache)
    python_function = owner._python_function if owner is not None else options.python_function
    code, qualname = innermost_code(python_function)
    lookup = caller.f_locals.get("lookup_func_type", function_type)
    func_context = caller.f_locals.get("current_func_context")
    signature, object_refs = signature_with_refs(lookup)
    traced_as = None
    if options.reduce_retracing and function_type is not lookup:
        generalized = tuple(signature_leaves(function_type))
        if generalized != signature:
            traced_as = generalized
    if code is not None:
        key = (code.co_filename, code.co_firstlineno, qualname)
        location = f"{short_path(code.co_filename)}:{code.co_firstlineno}"
    else:
        key = ("<unknown>", 0, qualname)
        location = "<unknown>"
    if origin is not None:
        key, qualname, location = origin.key, origin.name, origin.site or "<unknown>"
    keras, model = keras_info(caller, code) if code is not None and origin is None else (None, None)
    role = None
    trained = False
    if keras is not None:
        # One row per model and role: Keras' train and test functions run the same code but are
        # different functions to a user (fit vs evaluate), and the step function traced inside
        # the loop function belongs to the same row. Models from one place with one
        # architecture share a row (see model_group).
        role = KERAS_ROLES.get(keras.method, keras.method)
        key = (key[0], 0, f"keras {role} {model_group(model, keras)}")
        trained = mark_trained(model) if role == "train" else was_trained(model)
    counter = counter_of(owner) if owner is not None else None
    if owner is not None and origin is None:
        note_nested_trace(owner)
    model_ref = _weak(model)
    key_for = _key_maker(code, qualname, origin, keras, role, model_ref)
    if origin is not None and origin.kind == DATA:
        counter = None  # tf.data calls its functions in C++: a tf.data row counts pipeline builds
    return RawTrace(
        key=key,
        name=qualname,
        location=location,
        token=token_of(owner) if owner is not None else 0,
        signature=signature,
        traced_as=traced_as,
        context=context_fields(func_context),
        call_site=call_site(caller),
        thread=threading.current_thread().name,
        keras=keras,
        raw_key=lambda: f"{short_repr(func_context, 1000)} {short_repr(lookup, 1000)}",
        counter=counter,
        nested=nested,
        owner_ref=weakref.ref(owner) if owner is not None else None,
        model_ref=model_ref,
        counter_born=counter_born(owner) if owner is not None else 0.0,
        object_refs=object_refs,
        model_loaded=was_loaded(model),
        role=role,
        model_trained=trained,
        origin=origin.kind if origin is not None else None,
        saving=(origin is not None and origin.kind == EXPORT) or saving(caller),
        function_key=key_for,
        data_source=origin.source if origin is not None else None,
        library_site=(
            user_site(caller)
            if code is not None and origin is None and keras is None and is_library_file(code.co_filename)
            else None
        ),
    )


def _key_maker(
    code: Any, qualname: str, origin: Origin | None, keras: KerasInfo | None, role: str | None, model_ref: Any
) -> Callable[[str], FunctionKey | None]:
    """How to make the row's key later: from the user's call site, the Keras model, or the code."""
    if origin is not None:
        site = origin.site or "<unknown>"
        path = site.rpartition(":")[0] or site
        return lambda root: FunctionKey(module_of_path(path, root), origin.name, None)
    if keras is not None and role is not None:

        def keras_row(root: str) -> FunctionKey:
            model = model_ref() if model_ref is not None else None
            return keras_key(keras.built_at, keras.model_class, role, layer_names(model), root)

        return keras_row
    if code is not None:
        return lambda root: code_key(code, qualname, root)
    return lambda root: None


def _weak(value: Any) -> Any:
    if value is None:
        return None
    try:
        return weakref.ref(value)
    except TypeError:
        return None


def context_fields(func_context: Any) -> tuple[tuple[str, str], ...]:
    """The tracing context of a cache key (FunctionContext) as (field, text) pairs."""
    if func_context is None:
        return ()
    fields = [("scope_type", getattr(func_context.scope_type, "name", str(func_context.scope_type)))]
    eager = func_context.context
    if eager is not None:
        graph = eager.parent_graph
        fields.append(("graph", "eager" if graph is None else _graph_text(graph)))
        fields.append(("device", _device_text(eager.device_functions)))
        fields.append(("cross_replica", str(eager.in_cross_replica_context)))
        fields.append(("xla", "off" if not eager.xla_context_id else "xla context"))
        fields.append(("variable_policy", str(eager.variable_policy)))
        fields.append(("colocation", short_repr(eager.colocation_stack)))
    return tuple(fields)


def _graph_text(graph: Any) -> str:
    name = getattr(graph, "name", None)
    return f"{type(graph).__name__} {name}" if isinstance(name, str) else type(graph).__name__


def _device_text(device_functions: Any) -> str:
    if not device_functions:
        return "default"
    names = []
    for item in device_functions:
        spec = getattr(item, "_spec", None)
        names.append(spec.to_string() if spec is not None and hasattr(spec, "to_string") else str(item))
    return ", ".join(names)
