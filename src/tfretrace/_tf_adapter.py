"""The one module that touches TensorFlow and Keras internals: hooks, identity and TraceType reading."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from tfretrace.errors import TensorFlowMissingError, UnsupportedVersionError
from tfretrace.events import OBJECT, PYTHON, SPEC, TENSOR, VARIABLE, KerasInfo, Leaf

# Versions this adapter was written and tested against. Other versions fail loudly rather than
# silently misreading internals; TFRETRACE_ALLOW_UNSUPPORTED=1 overrides for the brave.
SUPPORTED_TF = ("2.21",)
SUPPORTED_KERAS_MAJOR = "3"
TESTED = "TensorFlow 2.21 with Keras 3.15"

_KERAS_METHODS = frozenset(
    {"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch"}
)
_KERAS_ROLES = {
    "fit": "train",
    "train_on_batch": "train",
    "evaluate": "test",
    "test_on_batch": "test",
    "predict": "predict",
    "predict_on_batch": "predict",
}
_TRAINER_FILE = os.path.join("keras", "src", "backend", "tensorflow", "trainer.py")
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


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


# ----------------------------------------------------------------------------------------------
# Loading TensorFlow and checking versions


def load_tensorflow() -> tuple[Any, Any]:
    """Import TensorFlow's tracing modules, checking the version; return (tf, tracing_compilation)."""
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise TensorFlowMissingError(
            "tfretrace's runtime monitor needs TensorFlow: pip install 'tfretrace[tensorflow]' "
            f"(or tensorflow-cpu); import failed with: {exc}"
        ) from None
    allow = os.environ.get("TFRETRACE_ALLOW_UNSUPPORTED") == "1"
    version = str(getattr(tf, "__version__", "?"))
    if not version.startswith(SUPPORTED_TF) and not allow:
        raise UnsupportedVersionError(
            f"tfretrace supports {TESTED}; found TensorFlow {version}. "
            "Set TFRETRACE_ALLOW_UNSUPPORTED=1 to try anyway."
        )
    keras_version = installed_keras_version()
    if keras_version and not keras_version.startswith(SUPPORTED_KERAS_MAJOR) and not allow:
        raise UnsupportedVersionError(
            f"tfretrace supports {TESTED}; found Keras {keras_version} (tf_keras / Keras 2 is "
            "not supported). Set TFRETRACE_ALLOW_UNSUPPORTED=1 to try anyway."
        )
    try:
        from tensorflow.python.eager.polymorphic_function import tracing_compilation
    except ImportError:
        raise UnsupportedVersionError(
            f"TensorFlow {version} lacks the tracing module tfretrace hooks ({TESTED})."
        ) from None
    if not hasattr(tracing_compilation, "_create_concrete_function"):
        raise UnsupportedVersionError(
            f"TensorFlow {tf.__version__} lacks the tracing hook tfretrace uses ({TESTED})."
        )
    return tf, tracing_compilation


def installed_keras_version() -> str | None:
    """The Keras version if Keras is already imported or importable, without importing TF."""
    module = sys.modules.get("keras")
    if module is not None:
        return str(getattr(module, "__version__", "")) or None
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("keras")
    except PackageNotFoundError:
        return None


def versions() -> tuple[str | None, str | None]:
    """(TensorFlow version, Keras version) of what is loaded, without importing anything new."""
    tf = sys.modules.get("tensorflow")
    return (getattr(tf, "__version__", None) if tf else None), installed_keras_version()


# ----------------------------------------------------------------------------------------------
# The hooks: one on the trace path (zero cost on cache hits), one counting calls


class Hooks:
    """Installs the trace hook and the call counter once, dispatching traces to one callback."""

    def __init__(self, on_trace: Callable[[Callable[[], RawTrace]], Any],
                 after_trace: Callable[[Any, float, bool], None]) -> None:
        self._on_trace = on_trace
        self._after_trace = after_trace
        self._installed = False
        self._orig_create: Any = None
        self._orig_call: Any = None
        self._tc: Any = None
        self._function_cls: Any = None
        self._depth = threading.local()
        self._keras = KerasPatches()

    def install(self) -> None:
        """Patch TensorFlow; idempotent."""
        if self._installed:
            return
        _, tc = load_tensorflow()
        from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

        self._tc, self._function_cls = tc, pf.Function
        self._orig_create = tc._create_concrete_function
        self._orig_call = pf.Function.__call__
        tc._create_concrete_function = self._make_create_hook(self._orig_create)
        pf.Function.__call__ = _make_call_hook(self._orig_call)
        self._keras.install()
        self._installed = True

    def uninstall(self) -> None:
        """Restore TensorFlow exactly as it was."""
        if not self._installed:
            return
        self._tc._create_concrete_function = self._orig_create
        self._function_cls.__call__ = self._orig_call
        self._keras.uninstall()
        self._installed = False

    def _make_create_hook(self, orig: Any) -> Any:
        on_trace, after_trace, depth = self._on_trace, self._after_trace, self._depth

        def _create_concrete_function(function_type, type_context, func_graph, tracing_options):  # type: ignore[no-untyped-def]
            caller = sys._getframe(1)
            try:
                wanted = is_user_trace(tracing_options)
            except Exception:  # never let a reading problem stop the user's trace
                wanted = False
            if not wanted:
                return orig(function_type, type_context, func_graph, tracing_options)
            level = getattr(depth, "n", 0)
            # on_trace catches its own errors; only a deliberate RetraceError escapes it.
            pending = on_trace(
                lambda: read_trace(function_type, tracing_options, caller, level > 0)
            )
            depth.n = level + 1
            ok = False
            start = time.perf_counter()
            try:
                result = orig(function_type, type_context, func_graph, tracing_options)
                ok = True
                return result
            finally:
                elapsed = time.perf_counter() - start
                depth.n = level
                if pending is not None:
                    after_trace(pending, elapsed, ok)

        return _create_concrete_function


def _make_call_hook(orig: Any) -> Any:
    # Counting calls is the only work on the cached path: one attribute read and one next() on an
    # itertools.count (atomic under the GIL, so concurrent callers are not lost).
    def __call__(self, *args, **kwds):  # type: ignore[no-untyped-def]
        try:
            next(self._tfretrace_calls)
        except AttributeError:
            counter_of(self)
            next(self._tfretrace_calls)
        return orig(self, *args, **kwds)

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
    return counter


def counter_born(function: Any) -> float:
    """When the counter of this tf.function object was created (perf_counter seconds)."""
    return float(function.__dict__.get("_tfretrace_born", 0.0))


def counter_value(counter: Any) -> int:
    """The number of next() calls made on an itertools.count (read without advancing it)."""
    text = repr(counter)  # "count(5)"
    return int(text[6:-1])


# ----------------------------------------------------------------------------------------------
# Reading one trace

_tokens: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_token_seq = itertools.count(1)
_token_lock = threading.Lock()


def token_of(function: Any) -> int:
    """A process-unique number for a tf.function object (ids are reused; these are not)."""
    with _token_lock:
        token = _tokens.get(function)
        if token is None:
            token = next(_token_seq)
            _tokens[function] = token
        return token


def read_trace(function_type: Any, options: Any, caller: FrameType, nested: bool) -> RawTrace:
    """Turn the trace hook's arguments and the caller's frame into a RawTrace."""
    owner = _owner_function(caller, options.function_cache)
    python_function = owner._python_function if owner is not None else options.python_function
    code, qualname = _innermost_code(python_function)
    lookup = caller.f_locals.get("lookup_func_type", function_type)
    func_context = caller.f_locals.get("current_func_context")
    _collect.refs = {}
    try:
        signature = tuple(_signature(lookup))
        object_refs = tuple(_collect.refs.items())
    finally:
        _collect.refs = None
    traced_as = None
    if options.reduce_retracing and function_type is not lookup:
        generalized = tuple(_signature(function_type))
        if generalized != signature:
            traced_as = generalized
    if code is not None:
        key = (code.co_filename, code.co_firstlineno, qualname)
        location = f"{_short_path(code.co_filename)}:{code.co_firstlineno}"
    else:
        key = ("<unknown>", 0, qualname)
        location = "<unknown>"
    keras, model = _keras_info(caller, code) if code is not None else (None, None)
    if keras is not None:
        # Keras' train and test functions run the same code; they are different functions to a
        # user (fit vs evaluate), so each role is its own group.
        key = (key[0], key[1], f"{qualname}#{_KERAS_ROLES.get(keras.method, keras.method)}")
    counter = counter_of(owner) if owner is not None else None
    return RawTrace(
        key=key,
        name=qualname,
        location=location,
        token=token_of(owner) if owner is not None else 0,
        signature=signature,
        traced_as=traced_as,
        context=_context_fields(func_context),
        call_site=_call_site(caller),
        thread=threading.current_thread().name,
        keras=keras,
        raw_key=lambda: _truncate(f"{func_context!r} {lookup!r}", 2000),
        counter=counter,
        nested=nested,
        owner_ref=weakref.ref(owner) if owner is not None else None,
        model_ref=_weak(model),
        counter_born=counter_born(owner) if owner is not None else 0.0,
        object_refs=object_refs,
        model_loaded=model is not None and model in _loaded_models,
    )


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
    code, _ = _innermost_code(function)
    wanted = code is None or not _is_tf_internal(code.co_filename)
    with contextlib.suppress(TypeError):  # not weak-referenceable: just not cached
        _user_code[function] = wanted
    return wanted


_OWNER_FRAMES = frozenset({"_call", "__call__", "_get_concrete_function_garbage_collected", "get_concrete_function"})


def _owner_function(frame: FrameType | None, cache: Any) -> Any:
    # The Function object that owns this cache is `self` in one of the frames above
    # (Function._call, or _get_concrete_function_garbage_collected for get_concrete_function).
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


def _innermost_code(function: Any) -> tuple[CodeType | None, str]:
    # The same unwrapping TensorFlow's own frequent-tracing detector does, plus the closure of
    # MirroredStrategy's per-replica wrapper, so clones are attributed to the user's function.
    seen = 0
    while seen < 20:
        seen += 1
        if hasattr(function, "__wrapped__"):
            function = function.__wrapped__
            continue
        if hasattr(function, "__func__"):
            function = function.__func__
            continue
        code = getattr(function, "__code__", None)
        if code is not None and code.co_name == "wrapped_fn" and "mirrored_run" in code.co_filename:
            inner = _closure_value(function, "fn")
            if inner is not None:
                function = getattr(inner, "_python_function", inner)
                continue
        break
    code = getattr(function, "__code__", None)
    qualname = getattr(function, "__qualname__", None) or getattr(function, "__name__", "?")
    return code, str(qualname)


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


def _is_tf_internal(filename: str) -> bool:
    # Compare with the real package folder: Keras has its own keras/src/backend/tensorflow/.
    tf_dir = _package_dir("tensorflow")
    if tf_dir is not None:
        return filename.startswith(tf_dir)
    return "/site-packages/tensorflow/" in filename.replace("\\", "/")


@functools.lru_cache(maxsize=4096)
def _is_framework_file(filename: str) -> bool:
    parts = filename.replace("\\", "/")
    return (
        _is_tf_internal(filename)
        or "/keras/" in parts
        or "/tf_keras/" in parts
        or "__autograph_generated" in parts
        or parts.startswith(_PKG_DIR.replace("\\", "/"))
        or parts.endswith(("/threading.py", "/contextlib.py", "/functools.py"))
        or "/absl/" in parts
        or "/optree/" in parts
    )


def _call_site(frame: FrameType | None) -> str | None:
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_framework_file(filename) and not filename.startswith("<frozen"):
            return f"{_short_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=4096)
def _short_path(filename: str) -> str:
    # Library files read best from the package down (keras/src/...), user files relative to cwd.
    marker = "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------------------------
# Keras attribution


def _keras_info(frame: FrameType | None, code: CodeType) -> tuple[KerasInfo | None, Any]:
    if not code.co_filename.replace("\\", "/").endswith(_TRAINER_FILE.replace("\\", "/")):
        return None, None
    method = None
    model = None
    epoch = step = None
    while frame is not None:
        name = frame.f_code.co_name
        if name in _KERAS_METHODS and "/keras/" in frame.f_code.co_filename.replace("\\", "/"):
            # The innermost Keras method is the one that owns this function: evaluate, when fit
            # runs validation. The epoch comes from the enclosing fit, if any.
            if method is None:
                method, model = name, frame.f_locals.get("self")
                step = _int_or_none(frame.f_locals.get("begin_step"))
            if name == "fit":
                epoch = _int_or_none(frame.f_locals.get("epoch"))
        frame = frame.f_back
    if model is None:
        return KerasInfo(model="?", model_class="?", method=_method_from_code(code)), None
    info = KerasInfo(
        model=str(getattr(model, "name", "?")),
        model_class=type(model).__name__,
        method=method or _method_from_code(code),
        built_at=_built_at.get(model),
        epoch=epoch,
        step=step,
    )
    return info, model


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _weak(value: Any) -> Any:
    if value is None:
        return None
    try:
        return weakref.ref(value)
    except TypeError:
        return None


# Where each Keras model was built and which ones came from load_model. Weak maps: tfretrace must
# never keep a user's model alive.
_built_at: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_loaded_models: weakref.WeakSet[Any] = weakref.WeakSet()


class KerasPatches:
    """Wraps Keras' Trainer.__init__ and saving_lib.load_model, now or when Keras gets imported."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []
        self._finder: _KerasImportWatcher | None = None

    def install(self) -> None:
        """Patch Keras if it is loaded; otherwise patch it right after its import."""
        if "keras.src.trainers.trainer" in sys.modules:
            self._patch()
        elif self._finder is None:
            self._finder = _KerasImportWatcher(self._patch)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        """Undo every patch and stop watching imports."""
        if self._finder is not None:
            if self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
            self._finder = None
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def _patch(self) -> None:
        if self._saved:
            return
        try:
            from keras.src.saving import saving_lib
            from keras.src.trainers import trainer
        except ImportError:
            return
        init = trainer.Trainer.__init__
        load = saving_lib.load_model

        def __init__(model, *args, **kwargs):  # type: ignore[no-untyped-def]
            init(model, *args, **kwargs)
            try:
                if model not in _built_at:
                    _built_at[model] = _call_site(sys._getframe(1)) or "?"
            except Exception:  # bookkeeping must never break model construction
                pass

        def load_model(*args, **kwargs):  # type: ignore[no-untyped-def]
            model = load(*args, **kwargs)
            with contextlib.suppress(TypeError):  # an unhashable model cannot be tracked
                _loaded_models.add(model)
            return model

        self._saved = [(trainer.Trainer, "__init__", init), (saving_lib, "load_model", load)]
        trainer.Trainer.__init__ = __init__
        saving_lib.load_model = load_model


class _KerasImportWatcher:
    """A meta-path finder that runs a callback once the ``keras`` package has been imported."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback
        self._busy = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "keras" or self._busy:
            return None
        import importlib.util

        self._busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        loader, callback = spec.loader, self._callback
        original_exec = loader.exec_module

        def exec_module(module: Any) -> None:
            original_exec(module)
            with contextlib.suppress(Exception):  # patching Keras must never break its import
                callback()

        spec.loader = _LoaderProxy(loader, exec_module)  # type: ignore[assignment]
        return spec


class _LoaderProxy:
    """Delegates to a real loader, with exec_module replaced."""

    def __init__(self, loader: Any, exec_module: Callable[[Any], None]) -> None:
        self._loader = loader
        self.exec_module = exec_module

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _method_from_code(code: CodeType) -> str:
    qualname = getattr(code, "co_qualname", code.co_name)
    for part, method in (("predict", "predict"), ("test", "evaluate"), ("train", "fit")):
        if f"make_{part}_function" in qualname:
            return method
    return code.co_name


# ----------------------------------------------------------------------------------------------
# TraceType -> leaves


def _signature(function_type: Any) -> Iterator[Leaf]:
    for name, parameter in function_type.parameters.items():
        yield from _describe(parameter.type_constraint, name)


def _describe(trace_type: Any, path: str) -> Iterator[Leaf]:
    cls = type(trace_type).__name__
    if cls in ("TensorSpec", "VariableSpec"):
        yield _tensor_leaf(trace_type, path)
    elif cls == "Literal":
        value = trace_type.value
        yield Leaf(path, PYTHON, value=_short_repr(value), type_name=type(value).__name__)
    elif cls == "Weakref":
        yield _object_leaf(trace_type._ref, path)
    elif cls in ("Tuple", "List"):
        items = trace_type.components_tuple.components if cls == "List" else trace_type.components
        yield Leaf(path, cls.lower(), value=f"of len {len(items)}", type_name=cls.lower())
        for number, item in enumerate(items):
            yield from _describe(item, f"{path}[{number}]")
    elif cls == "Dict":
        keys = list(trace_type.mapping)
        yield Leaf(path, "dict", value=f"with keys {_short_repr(keys)}", type_name="dict")
        for key in keys:
            yield from _describe(trace_type.mapping[key], f"{path}[{key!r}]")
    elif cls in ("NamedTuple", "Attrs"):
        inner = trace_type.named_attributes if cls == "Attrs" else trace_type
        names = inner.attribute_names
        yield Leaf(path, cls.lower(), value=f"with fields {tuple(names)}", type_name=inner.type_name)
        for name, item in zip(names, inner.attributes.components):
            yield from _describe(item, f"{path}.{name}")
    else:
        yield from _describe_spec(trace_type, path)


def _describe_spec(spec: Any, path: str) -> Iterator[Leaf]:
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
    yield Leaf(
        path,
        SPEC,
        dtype=getattr(dtype, "name", None),
        shape=_shape(shape) if shape is not None else None,
        value=_short_repr(spec),
        type_name=type(spec).__name__,
    )


def _describe_nest(value: Any, path: str) -> Iterator[Leaf]:
    if isinstance(value, dict):
        yield Leaf(path, "dict", value=f"with keys {_short_repr(list(value))}", type_name="dict")
        for key, item in value.items():
            yield from _describe_nest(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        kind = "list" if isinstance(value, list) else "tuple"
        yield Leaf(path, kind, value=f"of len {len(value)}", type_name=kind)
        for number, item in enumerate(value):
            yield from _describe_nest(item, f"{path}[{number}]")
    elif type(value).__name__ == "TensorSpec":
        yield _tensor_leaf(value, path)
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


_collect = threading.local()


def _object_leaf(ref: Any, path: str) -> Leaf:
    refs = getattr(_collect, "refs", None)
    if refs is not None:
        refs[path] = ref
    target = ref()
    if target is None:
        return Leaf(path, OBJECT, value="<collected>", type_name="?", ident=None, alive=False)
    cls = type(target)
    name = getattr(target, "name", None)
    label = f" name={name!r}" if isinstance(name, str) else ""
    compares = "identity" if getattr(cls, "__eq__", None) is getattr(object, "__eq__", None) else "eq"
    return Leaf(
        path,
        OBJECT,
        value=f"<{cls.__name__}{label} at {id(target):#x}>",
        type_name=cls.__name__,
        ident=id(target),
        alive=True,
        extra=(("compared_by", compares), ("module", cls.__module__)),
    )


def _short_repr(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # a user __repr__ may raise; never let it break tracing
        text = f"<{type(value).__name__} (repr failed)>"
    return _truncate(text, limit)


def _context_fields(func_context: Any) -> tuple[tuple[str, str], ...]:
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
        fields.append(("colocation", _short_repr(eager.colocation_stack)))
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
