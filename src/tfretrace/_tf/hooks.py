"""Installing and removing the hooks: one on the trace path (free on cache hits), one counting calls."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tfretrace._tf.counters import make_call_hook, note_concrete_call
from tfretrace._tf.draws import trace_draw
from tfretrace._tf.frames import call_site, is_keras_layer_kernel, is_user_trace, own_site
from tfretrace._tf.import_watch import ImportWatcher
from tfretrace._tf.keras import KerasPatches
from tfretrace._tf.origins import origin_of
from tfretrace._tf.reading import RawTrace, read_trace
from tfretrace._tf.versions import load_tensorflow, require_tensorflow, untested_notes, warn_once
from tfretrace._tf.xla import cluster_of
from tfretrace._util.tracebacks import PACKAGE_DIR


class HookUnavailable(Exception):
    """TensorFlow's tracing internals are not where tfretrace hooks them; nothing was patched."""


class Hooks:
    """Installs the trace hook and the call counter once, dispatching traces to one callback.

    All or nothing: both TensorFlow targets are looked up before either is replaced, so a
    TensorFlow whose internals moved is never left half patched (HookUnavailable says why).
    Keras attribution is optional on top: what could not be patched there is in ``notes``.
    """

    def __init__(self, on_trace: Callable[[Callable[[], RawTrace]], Any],
                 after_trace: Callable[[Any, float, bool, str | None, float, str | None], None]) -> None:
        self._on_trace = on_trace
        self._after_trace = after_trace
        self._installed = False
        self._orig_create: Any = None
        self._orig_call: Any = None
        self._orig_concrete: Any = None
        self._tc: Any = None
        self._function_cls: Any = None
        self._depth = threading.local()
        self._keras = KerasPatches()
        self._version_notes: list[str] = []
        self._waiting: ImportWatcher | None = None

    @property
    def notes(self) -> list[str]:
        """What the session should say about versions and about what could not be observed."""
        return [*self._version_notes, *self._keras.notes]

    def install(self) -> None:
        """Patch TensorFlow; idempotent. Raises HookUnavailable with nothing patched."""
        self._stop_waiting()
        if self._installed:
            return
        try:
            tf, tc = load_tensorflow()
            from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

            function_cls = pf.Function
            orig_create = tc._create_concrete_function
            orig_call = function_cls.__call__
            orig_concrete = function_cls.get_concrete_function
        except (ImportError, AttributeError) as exc:
            version = getattr(sys.modules.get("tensorflow"), "__version__", "?")
            raise HookUnavailable(
                f"TensorFlow {version}: traces not observed, its tracing internals moved "
                f"({type(exc).__name__}: {exc})"
            ) from None
        self._version_notes = untested_notes(str(getattr(tf, "__version__", "?")))
        if self._version_notes:
            warn_once("; ".join(self._version_notes), call_site(sys._getframe(1)))
        try:
            tc._create_concrete_function = self._make_create_hook(orig_create)
            function_cls.__call__ = _filtered_call_hook(orig_call)
            function_cls.get_concrete_function = _concrete_hook(orig_concrete)
        except Exception:
            tc._create_concrete_function = orig_create
            function_cls.__call__ = orig_call
            function_cls.get_concrete_function = orig_concrete
            raise
        self._tc, self._function_cls = tc, function_cls
        self._orig_create, self._orig_call, self._orig_concrete = orig_create, orig_call, orig_concrete
        self._installed = True
        try:
            self._keras.install()
        except Exception as exc:  # Keras attribution is a bonus: never lose the TF hooks over it
            self._keras.uninstall()
            self._keras.notes.append(f"Keras attribution off: {type(exc).__name__}: {exc}")

    @property
    def installed(self) -> bool:
        """Whether TensorFlow is patched now."""
        return self._installed

    def install_when_loaded(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` (which installs) right after the program's own import of TensorFlow.

        Importing TensorFlow before the program runs would change the program: TensorFlow reads
        TF_USE_LEGACY_KERAS (which Keras tf.keras is), its log level and other settings when it
        loads, and a program may set them in its first lines, as under python. Raises
        TensorFlowMissingError at once when TensorFlow is not installed at all.
        """
        require_tensorflow()
        # `import keras` imports TensorFlow halfway through its own import: Keras is patched at
        # the end of its import, by a watcher that must be in place before it begins.
        self._keras.watch()
        if self._waiting is None:
            self._waiting = ImportWatcher({"tensorflow"}, lambda _name: callback())
            sys.meta_path.insert(0, self._waiting)

    def _stop_waiting(self) -> None:
        if self._waiting is not None:
            if self._waiting in sys.meta_path:
                sys.meta_path.remove(self._waiting)
            self._waiting = None

    def uninstall(self) -> None:
        """Restore TensorFlow exactly as it was."""
        self._stop_waiting()
        if not self._installed:
            self._keras.uninstall()  # its import watcher, set while waiting for TensorFlow
            return
        self._tc._create_concrete_function = self._orig_create
        self._function_cls.__call__ = self._orig_call
        self._function_cls.get_concrete_function = self._orig_concrete
        self._keras.uninstall()
        self._installed = False

    def _make_create_hook(self, orig: Any) -> Any:
        on_trace, after_trace, depth = self._on_trace, self._after_trace, self._depth

        def _create_concrete_function(function_type, type_context, func_graph, tracing_options):  # type: ignore[no-untyped-def]
            caller = sys._getframe(1)
            failure: Exception | None = None
            try:
                user = is_user_trace(tracing_options)
                wanted = user and not is_keras_layer_kernel(tracing_options)
                # Framework code traced for a call of the user's (tf.vectorized_map, a restored
                # function, a tf.data pipeline, a Keras export, whose endpoint is the model's
                # Layer.__call__) is reported at that call.
                origin = origin_of(tracing_options, caller, user)
            except Exception as exc:  # never let a reading problem stop the user's trace
                wanted, origin, failure = False, None, exc
            if failure is not None:
                on_trace(_raising(failure))  # each monitor counts it as an internal error
            if not wanted and origin is None:
                return orig(function_type, type_context, func_graph, tracing_options)
            level = getattr(depth, "n", 0)
            # on_trace catches its own errors; only a deliberate RetraceError escapes it.
            pending = on_trace(
                lambda: read_trace(function_type, tracing_options, caller, level > 0, origin)
            )
            depth.n = level + 1
            # Time spent in the user traces nested in this one, so that each second is counted
            # once: a trace's own time is its time less that of the traces it contains.
            outer_children = getattr(depth, "children", 0.0)
            depth.children = 0.0
            ok = False
            cluster = draw = None
            start = time.perf_counter()
            try:
                result = orig(function_type, type_context, func_graph, tracing_options)
                ok = True
                try:  # the name XLA's log gives this trace's compiles (jit_compile only)
                    cluster = cluster_of(result, tracing_options)
                except Exception:
                    cluster = None
                # A random draw in the graph (in a layer or helper the def calls, too): kept, as the function
                # may be gone when the run is over and its fixes are planned.
                draw = trace_draw(result)
                return result
            finally:
                elapsed = time.perf_counter() - start
                own = max(elapsed - depth.children, 0.0)
                depth.n = level
                depth.children = outer_children + elapsed
                if pending is not None:
                    after_trace(pending, elapsed, ok, cluster, own, draw)

        return _create_concrete_function


def _has_python_value(args: Any, kwargs: Any) -> bool:
    """Whether a get_concrete_function call passes a Python number, bool or string among its arguments."""
    stack = [*args, *kwargs.values()]
    while stack:
        value = stack.pop()
        if isinstance(value, (bool, int, float, str)):
            return True
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


def _concrete_hook(orig: Any) -> Any:
    """Function.get_concrete_function, noting its user call sites (rare calls: the cost is a frame walk)."""

    def get_concrete_function(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            # Only the user's own calls: Keras' exports and tfretrace's warm-ups call it too.
            site = own_site(sys._getframe(1))
            if site is not None:
                note_concrete_call(self, site, _has_python_value(args, kwargs))
        except Exception:  # noting a call site is extra information: never stop the user's call
            pass
        return orig(self, *args, **kwargs)

    get_concrete_function.__wrapped__ = orig  # type: ignore[attr-defined]
    return get_concrete_function


def _raising(exc: Exception) -> Callable[[], RawTrace]:
    def read() -> RawTrace:
        raise exc

    return read


def _filtered_call_hook(orig_call: Any) -> Any:
    """The call-counting hook, placed where TensorFlow's traceback filter hides its frame.

    TensorFlow wraps Function.__call__ in a filter that drops its own frames from the
    tracebacks of errors raised inside; tfretrace's folder is added to what it drops, and the
    hook goes inside the filter, so an error in a trace or a refused budget shows the user's
    frames, not tfretrace's (the hook on the trace path runs inside the filter already).
    """
    try:
        from tensorflow.python.util import traceback_utils

        inner = orig_call.__wrapped__
        excluded = traceback_utils._EXCLUDED_PATHS
        if not isinstance(excluded, tuple) or not callable(traceback_utils.filter_traceback):
            raise AttributeError("traceback filter changed")
    except (ImportError, AttributeError):
        return make_call_hook(orig_call)  # no filter to hide in: the hook's frame shows
    if PACKAGE_DIR not in excluded:
        traceback_utils._EXCLUDED_PATHS = (*excluded, PACKAGE_DIR)
    hooked = traceback_utils.filter_traceback(make_call_hook(inner))
    # What the hook replaced is TensorFlow's own __call__, filter included.
    hooked.__wrapped__ = orig_call
    return hooked
