"""Reading Python frames: user versus framework files, call sites, the owning tf.function object."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import types
import weakref
from types import CodeType, FrameType
from typing import Any

from tfretrace._util.tracebacks import PACKAGE_DIR

# The tfretrace package folder: its own frames are never the user's call site.

_user_code: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def is_user_trace(options: Any) -> bool:
    """False for TensorFlow's own helper traces (tf.data map functions, initialize_variables)."""
    if options.function_cache is None:
        return False
    function = options.python_function
    try:
        return _user_code[function]
    except (KeyError, TypeError):
        pass
    code, _ = innermost_code(function)
    wanted = code is None or not _is_tf_internal(code.co_filename)
    with contextlib.suppress(TypeError):  # not weak-referenceable: just not cached
        _user_code[function] = wanted
    return wanted


_OWNER_FRAMES = frozenset({"_call", "__call__", "_get_concrete_function_garbage_collected", "get_concrete_function"})


def owner_function(frame: FrameType | None, cache: Any) -> Any:
    """The tf.function object whose cache is ``cache``, found as ``self`` in the frames above."""
    # Function._call, or _get_concrete_function_garbage_collected for get_concrete_function.
    # Reading f_locals copies a frame's locals, so only the frames that can hold it are read.
    for _ in range(12):
        if frame is None:
            return None
        if frame.f_code.co_name in _OWNER_FRAMES:
            candidate = frame.f_locals.get("self")
            if candidate is not None and getattr(candidate, "_function_cache", None) is cache:
                return candidate
        frame = frame.f_back
    return None


def innermost_code(function: Any) -> tuple[CodeType | None, str]:
    """The code object and qualified name of the user's function under any wrappers."""
    # The same unwrapping TensorFlow's own frequent-tracing detector does, plus the closure of
    # MirroredStrategy's per-replica wrapper, so clones are attributed to the user's function.
    seen = 0
    bound: str | None = None
    while seen < 20:
        seen += 1
        if hasattr(function, "__wrapped__"):
            function = function.__wrapped__
            continue
        if hasattr(function, "__func__"):
            function = function.__func__
            continue
        if isinstance(function, functools.partial):
            # tf.function(partial(f, ...)): the traced code is f's.
            if bound is None:
                bound = _bound_values(function)
            function = function.func
            continue
        code = getattr(function, "__code__", None)
        if code is not None and code.co_name == "wrapped_fn" and "mirrored_run" in code.co_filename:
            inner = _closure_value(function, "fn")
            if inner is not None:
                function = getattr(inner, "_python_function", inner)
                continue
        if code is None and not isinstance(function, type):
            # tf.function(callable_object): the traced code is its class's __call__. Looked up on
            # the class without descriptors, so no user code runs.
            call = static_attr(type(function), "__call__")
            if isinstance(call, (staticmethod, classmethod)):
                call = call.__func__
            if getattr(call, "__code__", None) is not None:
                function = call
                continue
        break
    code = getattr(function, "__code__", None)
    if isinstance(function, (types.FunctionType, types.BuiltinFunctionType, type)):
        qualname = getattr(function, "__qualname__", None) or getattr(function, "__name__", "?")
    else:  # any other callable: its class's name, read without running its properties
        qualname = static_attr(function, "__qualname__")
        if not isinstance(qualname, str):
            qualname = f"{type(function).__qualname__} object"
    if bound:
        # partial(power, 2) and partial(power, 3) are two functions to the user, each traced
        # once: named (and keyed) apart. partial(power, 2) made again is the same function.
        return code, f"partial({qualname}, {bound})"
    return code, str(qualname)


_LITERALS = (type(None), bool, int, float, complex, str, bytes)
_MAX_BOUND = 80


def _bound_values(partial: functools.partial[Any]) -> str | None:
    """The values a partial binds as written (``2, exp=3``), when all are plain literals.

    Only exact literal types, whose repr runs no user code and says the value; anything else
    (a model, a tensor) or a long text gives None, and the row stays the code's.
    """
    try:
        parts = [_literal(v) for v in partial.args]
        parts += [f"{k}={_literal(v)}" for k, v in partial.keywords.items()]
    except ValueError:
        return None
    text = ", ".join(parts)
    return text if len(text) <= _MAX_BOUND else None


def _literal(value: Any, depth: int = 0) -> str:
    if type(value) in _LITERALS:
        return repr(value)
    if type(value) is tuple and depth < 2:
        inner = ", ".join(_literal(v, depth + 1) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    raise ValueError("not a literal")


def static_attr(obj: Any, name: str) -> Any:
    """An attribute as stored (inspect.getattr_static): no property or __getattr__ runs; None if absent."""
    try:
        return inspect.getattr_static(obj, name)
    except AttributeError:
        return None


def _closure_value(function: Any, name: str) -> Any:
    code = function.__code__
    if function.__closure__ and name in code.co_freevars:
        cell = function.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            return None
    return None


_package_dirs: dict[str, str] = {}


def _package_dir(name: str) -> str | None:
    cached = _package_dirs.get(name)
    if cached is not None:
        return cached
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return None
    found: str = os.path.dirname(os.path.abspath(path)) + os.sep
    _package_dirs[name] = found
    return found


def is_keras_layer_kernel(options: Any) -> bool:
    """A tf.function that a Keras layer makes for its own computation.

    Keras 2's LSTM and GRU (``standard_lstm``, ``lstm_with_backend_selection``) wrap their kernels
    in a new tf.function at every layer call: once when the model is built, again inside each of
    the model's own traces. Part of the layer, not something the user made or can change.
    """
    try:
        code, _ = innermost_code(options.python_function)
    except Exception:  # unreadable: keep the trace
        return False
    if code is None:
        return False
    filename = code.co_filename.replace("\\", "/")
    for name in ("keras", "tf_keras"):
        found = _package_dir(name)
        if found is not None and filename.startswith(found.replace("\\", "/")):
            return "/layers/" in filename[len(found) - 1 :]
    return False


def _is_tf_internal(filename: str) -> bool:
    # Compare with the real package folder: Keras has its own keras/src/backend/tensorflow/.
    tf_dir = _package_dir("tensorflow")
    if tf_dir is not None:
        return filename.startswith(tf_dir)
    return "/site-packages/tensorflow/" in filename.replace("\\", "/")


@functools.lru_cache(maxsize=4096)
def is_framework_file(filename: str) -> bool:
    """TensorFlow's, Keras', tfretrace's or the standard wrappers' code: never the user's."""
    parts = filename.replace("\\", "/")
    return (
        _is_tf_internal(filename)
        or "/keras/" in parts
        or "/tf_keras/" in parts
        or "__autograph_generated" in parts
        or parts.startswith(PACKAGE_DIR.replace("\\", "/"))
        or parts.endswith(("/threading.py", "/contextlib.py", "/functools.py"))
        or "/absl/" in parts
        or "/optree/" in parts
    )


def own_site(frame: FrameType) -> str | None:
    """``path:line`` of this very frame when it is the user's code (not TensorFlow's, Keras' or tfretrace's)."""
    filename = frame.f_code.co_filename
    if is_framework_file(filename) or filename.startswith("<"):
        return None
    return f"{short_path(filename)}:{frame.f_lineno}"


def call_site(frame: FrameType | None) -> str | None:
    """``path:line`` of the innermost frame in the user's own code, if any."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_framework_file(filename) and not filename.startswith("<frozen"):
            return f"{short_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=4096)
def is_library_file(filename: str) -> bool:
    """A file of an installed package (site-packages, dist-packages) or of the standard library.

    Its tf.functions are the library's (TF Probability's per-distribution function, tf-keras'
    per-layer adapt_step): a new object per library object is by design, and no edit of the
    user's reaches it. The user's project, installed editable, is not under these folders.
    """
    parts = filename.replace("\\", "/")
    if "/site-packages/" in parts or "/dist-packages/" in parts:
        return True
    stdlib = os.path.dirname(os.__file__).replace("\\", "/") + "/"
    return parts.startswith(stdlib)


def user_site(frame: FrameType | None) -> str | None:
    """``path:line`` of the innermost frame in the user's own code, skipping every library too."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_framework_file(filename) and not is_library_file(filename) and not filename.startswith("<frozen"):
            return f"{short_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=4096)
def short_path(filename: str) -> str:
    """A file name as people read it: library files from the package down, user files relative."""
    marker = "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
