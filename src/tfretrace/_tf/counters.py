"""The call-count hook on Function.__call__ and process-unique tokens for tf.function objects."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

# One optional watcher of every call (prevention's warm-up): ``watch(function, args, kwds)``
# runs before the call and may return a callable to run after it. A one-element list so the hook
# reads it without a global statement; None costs the cached path one list read.
_call_watch: list[Any] = [None]


def set_call_watch(watch: Any) -> Any:
    """Install ``watch`` (or None) as the call watcher; returns the one it replaced."""
    previous, _call_watch[0] = _call_watch[0], watch
    return previous


# Depth of prevention warm-ups running on this thread: the traces they make are the warm-up's.
_warming = threading.local()


def warming_now() -> bool:
    """True while this thread runs a prevention warm-up trace."""
    return bool(getattr(_warming, "depth", 0))


@contextlib.contextmanager
def warming() -> Iterator[None]:
    """Mark the traces this thread makes in the block as warm-up traces (not retraces)."""
    _warming.depth = getattr(_warming, "depth", 0) + 1
    try:
        yield
    finally:
        _warming.depth -= 1


def make_call_hook(orig: Any) -> Any:
    """Wrap Function.__call__ so that each call advances the object's counter."""
    # Counting calls is the only work on the cached path: one attribute read and one next() on an
    # itertools.count (atomic under the GIL, so concurrent callers are not lost).
    def __call__(self, *args, **kwds):  # type: ignore[no-untyped-def]
        try:
            next(self._tfretrace_calls)
        except AttributeError:
            counter_of(self)
            next(self._tfretrace_calls)
        watch = _call_watch[0]
        if watch is None:
            return orig(self, *args, **kwds)
        after = watch(self, args, kwds)
        result = orig(self, *args, **kwds)
        if after is not None:
            after()
        return result

    __call__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __call__


def counter_of(function: Any) -> Any:
    """The call counter attached to a tf.function object, created on first use.

    setdefault keeps creation atomic under the GIL, so concurrent first calls share one counter;
    the creation time tells a monitor whether all of its calls happened while it was watching.
    """
    counter = function.__dict__.get("_tfretrace_calls")
    if counter is None:
        function.__dict__.setdefault("_tfretrace_born", time.perf_counter())
        counter = function.__dict__.setdefault("_tfretrace_calls", itertools.count())
        with contextlib.suppress(TypeError):
            _counted.add(function)
        _keep_nested(function)
    return counter


# A nested def that closes over nothing (fix kind hoist-def moves it to module level) is made a new
# tf.function by each call of its outer def, which drops it on return: its traces die with it. A
# few such objects per def are kept alive, only their code, module globals and traces (no closure
# holds another scope's values), so the probe can run those traces beside the def as hoisted
# once the program has finished (runtime.probe). Bounded per def and in defs.
_MAX_NESTED = 8
_MAX_NESTED_DEFS = 64
_nested: dict[tuple[str, str], list[Any]] = {}


def _keep_nested(function: Any) -> None:
    python = getattr(function, "python_function", None)
    code = getattr(python, "__code__", None)
    qualname = getattr(python, "__qualname__", "")
    if code is None or code.co_freevars or "<locals>" not in qualname:
        return
    key = (code.co_filename, qualname)
    if key not in _nested and len(_nested) >= _MAX_NESTED_DEFS:
        return
    kept = _nested.setdefault(key, [])
    if len(kept) < _MAX_NESTED:
        kept.append(function)


# A nested def that closes over its outer def's values (a train step over a model and an optimizer)
# dies with the call that made it; once the program has finished no name reaches it, and
# TensorFlow cannot be asked about it. Only where the run will be asked (``run --save``,
# ``--fix-plan``: keep_retraced) is each such object kept alive from its first trace, closure and
# all, until the planner has asked (keep_retraced(False)): so the probe can trace the general
# signature on the very closure, or run one object beside the traces of every object an outer def
# made. Bounded per def and in all; a plain run keeps nothing.
_MAX_CLOSURES_PER_DEF = 64
_MAX_CLOSURE_DEFS = 16
_closures: dict[tuple[str, str], list[Any]] = {}
_given_up: set[tuple[str, str]] = set()
_keeping = [False]


def keep_retraced(on: bool) -> None:
    """Keep (or, off, release) the tf.function objects of nested closures for the probe at the end."""
    _keeping[0] = on
    if not on:
        _closures.clear()
        _given_up.clear()


def note_nested_trace(function: Any) -> None:
    """Keep ``function`` from its first trace where it is a nested closure and keep_retraced is on."""
    if not _keeping[0]:
        return
    python = getattr(function, "python_function", None)
    code = getattr(python, "__code__", None)
    qualname = getattr(python, "__qualname__", "")
    if code is None or not code.co_freevars or "<locals>" not in qualname or _installed(code.co_filename):
        return  # a library's closures (Keras' train functions) are never planned: theirs to free
    key = (code.co_filename, qualname)
    if key in _given_up or (key not in _closures and len(_closures) >= _MAX_CLOSURE_DEFS):
        return
    kept = _closures.setdefault(key, [])
    if any(f is function for f in kept):
        return
    if len(kept) >= _MAX_CLOSURES_PER_DEF:
        # More objects than the probe asks about (it asks only where every one was kept): let them all go.
        del _closures[key]
        _given_up.add(key)
        return
    kept.append(function)


def _installed(filename: str) -> bool:
    # An installed package's file (site-packages, dist-packages) or Python's own: not the program's.
    norm = filename.replace("\\", "/")
    return norm.startswith("<") or "/site-packages/" in norm or "/dist-packages/" in norm or "/lib/python3." in norm


def kept_closures(qualname: str) -> list[Any]:
    """The nested closures named ``qualname`` (any file) that note_nested_trace kept, first traced first."""
    return [f for (_file, name), kept in list(_closures.items()) if name == qualname for f in kept]


def kept_nested(qualname: str) -> list[Any]:
    """The tf.function objects of nested defs named ``qualname`` (any file) that were kept (``_keep_nested``)."""
    return [f for (_file, name), kept in list(_nested.items()) if name == qualname for f in kept]


# Every tf.function object with a call counter, so that a monitor starting late knows how many
# calls each had already made (its own count starts from there, not from its first trace).
_counted: weakref.WeakSet[Any] = weakref.WeakSet()


def counted_functions() -> list[Any]:
    """Every live tf.function object that was called while the hooks were in."""
    return list(_counted)


def snapshot() -> dict[int, int]:
    """id(counter) -> calls made so far, for every live call counter."""
    out: dict[int, int] = {}
    for function in list(_counted):
        counter = function.__dict__.get("_tfretrace_calls")
        if counter is not None:
            out[id(counter)] = counter_value(counter)
    return out


# Sites of get_concrete_function calls per tf.function object: at most this many are kept.
_MAX_CONCRETE_SITES = 16


def note_concrete_call(function: Any, site: str | None, python_values: bool) -> None:
    """Remember that ``function.get_concrete_function`` was called at ``site`` (Python values or not).

    A fix planner replays only the calls that traced; a ``get_concrete_function`` call that hit the
    cache is invisible to it, yet an edit at the ``__call__`` sites can make it trace again.
    """
    counter_of(function)  # so that the function is found again from its counter
    sites = function.__dict__.setdefault("_tfretrace_concrete", {})
    if site is not None and (site in sites or len(sites) < _MAX_CONCRETE_SITES):
        sites[site] = sites.get(site, False) or python_values


def concrete_sites(counter: Any) -> dict[str, bool]:
    """The get_concrete_function sites noted for the tf.function object whose call counter this is."""
    for function in list(_counted):
        if function.__dict__.get("_tfretrace_calls") is counter:
            return dict(function.__dict__.get("_tfretrace_concrete", {}))
    return {}


def counter_born(function: Any) -> float:
    """When the counter of this tf.function object was created (perf_counter seconds)."""
    return float(function.__dict__.get("_tfretrace_born", 0.0))


def counter_value(counter: Any) -> int:
    """The number of next() calls made on an itertools.count (read without advancing it)."""
    text = repr(counter)  # "count(5)"
    return int(text[6:-1])


_token_seq = itertools.count(1)
_token_lock = threading.Lock()
# id(trace cache) -> (token, weakref to a tf.function object using that cache).
_cache_tokens: dict[int, tuple[int, Any]] = {}


def token_of(function: Any) -> int:
    """A process-unique number for the trace cache of a tf.function object.

    Ids are reused, these numbers are not. A ``copy.copy`` of a tf.function shares its cache
    (and its call counter), so it shares its token: tracing through the copy is a retrace of
    the same cache, not a new function object.
    """
    cache = getattr(function, "_function_cache", None)
    entry = function.__dict__.get("_tfretrace_token")
    if entry is not None and entry[1] == id(cache):
        return int(entry[0])
    with _token_lock:
        shared = _cache_tokens.get(id(cache))
        owner = shared[1]() if shared is not None else None
        if shared is not None and owner is not None and getattr(owner, "_function_cache", None) is cache:
            token = shared[0]
        else:
            token = next(_token_seq)
            _cache_tokens[id(cache)] = (token, weakref.ref(function, _forget(id(cache), token)))
        function.__dict__["_tfretrace_token"] = (token, id(cache))
        return token


def _forget(key: int, token: int) -> Any:
    def drop(_: Any) -> None:
        with _token_lock:
            if _cache_tokens.get(key, (None,))[0] == token:
                del _cache_tokens[key]

    return drop
