"""Reading the traces a tf.function's cache already holds, made before a monitor first met it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfretrace._tf.reading import context_fields
from tfretrace._tf.types import signature_with_refs
from tfretrace.records.events import Leaf


@dataclass(frozen=True)
class CachedTrace:
    """One concrete function in a tf.function's cache, as plain data: what was traced, and where."""

    signature: tuple[Leaf, ...]
    context: tuple[tuple[str, str], ...]
    # (path, weakref) of arguments keyed by identity, as RawTrace.object_refs.
    object_refs: tuple[tuple[str, Any], ...] = ()


def cached_traces(function: Any) -> tuple[CachedTrace, ...]:
    """The traces in a tf.function object's cache, oldest first; () where they cannot be read.

    TensorFlow 2.15 to 2.21 keep them in ``Function._function_cache`` (a FunctionCache), whose
    ``_primary`` maps (FunctionContext, FunctionType) to the concrete function in insertion
    order, which is trace order. The key's FunctionType is the type that was traced (generalized
    under reduce_retracing), the one later calls are dispatched against. Anything else found
    there (a TensorFlow whose internals moved) reads as no earlier traces: today's behaviour.
    """
    try:
        cache = vars(function).get("_function_cache")
        primary = getattr(cache, "_primary", None)
        if not isinstance(primary, Mapping):
            return ()
        keys = list(primary.keys())  # a copy: another thread may add a trace meanwhile
        found = []
        for key in keys:
            if not (isinstance(key, tuple) and len(key) == 2 and hasattr(key[1], "parameters")):
                return ()
            context, function_type = key
            signature, refs = signature_with_refs(function_type)
            found.append(CachedTrace(signature, context_fields(context), refs))
        return tuple(found)
    except Exception:  # reading is a bonus: never let it reach the user's call
        return ()
