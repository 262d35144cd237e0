"""Which traces made before a watch began its calls reused: cache hits, per tf.function code."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from tfretrace._tf.counters import counted_functions
from tfretrace._tf.frames import innermost_code, is_framework_file, short_path
from tfretrace._tf.reading import context_fields
from tfretrace._tf.types import signature_with_refs
from tfretrace.records.events import Leaf
from tfretrace.records.function_key import FunctionKey, code_key


@dataclass(frozen=True)
class Reused:
    """One function's traces from before the watch that calls during it reused (by code, as rows are).

    ``sequence``: the traces the watched calls would have made with empty caches, in order: each
    trace made during the watch, and each earlier trace at its first reuse, as (object token,
    signature, context).
    """

    key: tuple[str, int, str]
    name: str
    location: str
    function_key: FunctionKey
    traces: int
    sequence: tuple[tuple[int, tuple[Leaf, ...], tuple[tuple[str, str], ...]], ...]


class CacheHits:
    """Wraps TensorFlow's cache lookup and insertion while started: which cached traces calls reused.

    The trace hook sees only calls that trace; a call served by a trace made before the watch
    (an earlier test's) is invisible to it, yet would have traced had the cache been empty. Only
    started for a test whose counts must not depend on the tests before it: the wrapper costs the
    cached path one Python call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cls: Any = None
        self._lookup: Any = None
        self._add: Any = None
        # id(concrete function) of the traces added while started; per id(cache): the earlier
        # traces reused, and (function type, context) of every trace made or first reused, in order.
        self._added: set[int] = set()
        self._reused: dict[int, set[int]] = {}
        self._order: dict[int, list[tuple[Any, Any]]] = {}

    def start(self) -> CacheHits:
        """Install the wrappers (none where TensorFlow's cache moved: then nothing is reused)."""
        try:
            from tensorflow.core.function.polymorphism import function_cache

            cls = function_cache.FunctionCache
            lookup, add = cls.lookup, cls.add
        except (ImportError, AttributeError):
            return self
        added, reused, order, lock = self._added, self._reused, self._order, self._lock

        def lookup_hook(cache, function_type, context=None):  # type: ignore[no-untyped-def]
            found = lookup(cache, function_type, context)
            if found is not None and id(found) not in added:
                with lock:
                    seen = reused.setdefault(id(cache), set())
                    if id(found) not in seen:
                        seen.add(id(found))
                        order.setdefault(id(cache), []).append((getattr(found, "function_type", None), context))
            return found

        def add_hook(cache, fn, context=None):  # type: ignore[no-untyped-def]
            with lock:
                if id(fn) not in added:  # a variable-creation trace and its retrace add one entry twice
                    added.add(id(fn))
                    order.setdefault(id(cache), []).append((getattr(fn, "function_type", None), context))
            return add(cache, fn, context)

        self._cls, self._lookup, self._add = cls, lookup, add
        cls.lookup, cls.add = lookup_hook, add_hook
        return self

    def stop(self) -> None:
        """Put TensorFlow's own lookup and insertion back."""
        if self._cls is not None:
            self._cls.lookup, self._cls.add = self._lookup, self._add
            self._cls = None

    def reused(self, root: str) -> list[Reused]:
        """Per user function whose calls reused earlier traces: how many, and the empty-cache sequence.

        Keras' own functions and other framework code are left out (they are rows of their own).
        """
        with self._lock:
            reused = {cache: len(found) for cache, found in self._reused.items() if found}
            order = {cache: list(self._order.get(cache, ())) for cache in reused}
        out: dict[tuple[str, int, str], Reused] = {}
        for function in counted_functions():
            cache = vars(function).get("_function_cache")
            if cache is None or id(cache) not in reused:
                continue
            code, qualname = innermost_code(getattr(function, "_python_function", None))
            if code is None or is_framework_file(code.co_filename):
                continue
            key = (code.co_filename, code.co_firstlineno, qualname)
            sequence = []
            for function_type, context in order[id(cache)]:
                if function_type is None:
                    return []  # a TensorFlow whose traces carry no type: nothing to say
                sequence.append((id(cache), signature_with_refs(function_type)[0], context_fields(context)))
            before = out.get(key)
            if before is not None:  # another object of the same code (a method's per-instance functions)
                sequence = [*before.sequence, *sequence]
            count = reused[id(cache)] + (before.traces if before is not None else 0)
            location = f"{short_path(code.co_filename)}:{code.co_firstlineno}"
            out[key] = Reused(key, qualname, location, code_key(code, qualname, root), count, tuple(sequence))
        return list(out.values())
