"""Keras attribution: which model and method own a trace, and the patches that record models."""

from __future__ import annotations

import contextlib
import importlib
import sys
import weakref
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from tfretrace._tf.frames import call_site
from tfretrace._tf.import_watch import ImportWatcher
from tfretrace._tf.keras_live import remember_predict
from tfretrace._tf.keras_rows import predict_rows
from tfretrace.records.events import KerasInfo

_KERAS_METHODS = frozenset(
    {"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch"}
)
KERAS_ROLES = {
    "fit": "train",
    "train_on_batch": "train",
    "evaluate": "test",
    "test_on_batch": "test",
    "predict": "predict",
    "predict_on_batch": "predict",
}


@dataclass(frozen=True)
class Flavor:
    """Where one Keras keeps the pieces tfretrace reads or wraps."""

    package: str
    # The file whose closures are the train/test/predict tf.functions (path suffix, '/'-separated).
    functions_file: str
    # The module and the class (first one present) whose __init__ every model runs.
    base_module: str
    base_classes: tuple[str, ...]
    # Modules whose load_model the public keras.models.load_model calls through.
    load_modules: tuple[str, ...]


# Keras 3 builds its tf.functions in the TensorFlow backend's trainer (TensorFlowTrainer, renamed
# Trainer in 3.16, whose base Trainer became BaseTrainer). Keras 2 (TF 2.15's keras, tf_keras)
# builds them in engine/training.py, where model.train_function is itself the tf.function.
KERAS3 = Flavor(
    "keras",
    "keras/src/backend/tensorflow/trainer.py",
    "keras.src.trainers.trainer",
    ("Trainer", "BaseTrainer"),
    ("keras.src.saving.saving_lib",),
)
KERAS2 = Flavor(
    "keras",
    "keras/src/engine/training.py",
    "keras.src.engine.training",
    ("Model",),
    ("keras.src.saving.saving_lib", "keras.src.saving.legacy.save"),
)
TF_KERAS = Flavor(
    "tf_keras",
    "tf_keras/src/engine/training.py",
    "tf_keras.src.engine.training",
    ("Model",),
    ("tf_keras.src.saving.saving_lib", "tf_keras.src.saving.legacy.save"),
)
_FUNCTION_FILES = tuple(f.functions_file for f in (KERAS3, KERAS2, TF_KERAS))


def _initializing(name: str) -> bool:
    """Whether a module is still running its own top-level code (imported halfway)."""
    return bool(getattr(getattr(sys.modules.get(name), "__spec__", None), "_initializing", False))


def is_keras_functions_file(filename: str) -> bool:
    """Whether a file holds Keras' train/test/predict tf.functions (attributed by keras_info)."""
    return filename.replace("\\", "/").endswith(_FUNCTION_FILES)


def flavor_of(package: str) -> Flavor | None:
    """The flavor of an imported Keras package ('keras' or 'tf_keras'), or None if not imported."""
    module = sys.modules.get(package)
    if module is None:
        return None
    if package == "tf_keras":
        return TF_KERAS
    version = str(getattr(module, "__version__", ""))
    return KERAS2 if version.startswith("2.") else KERAS3


def keras_info(frame: FrameType | None, code: CodeType) -> tuple[KerasInfo | None, Any]:
    """(KerasInfo, model) when ``code`` is a Keras train/test/predict function, else (None, None)."""
    if not is_keras_functions_file(code.co_filename):
        return None, None
    method = None
    model = None
    epoch = step = None
    rows = None
    while frame is not None:
        name = frame.f_code.co_name
        if name in _KERAS_METHODS and is_keras_file(frame.f_code.co_filename):
            # The innermost Keras method is the one that owns this function: evaluate, when fit
            # runs validation. The epoch comes from the enclosing fit, if any.
            if method is None:
                method, model = name, frame.f_locals.get("self")
                # Keras 3.11+ names the loop variable begin_step; Keras 2 and older Keras 3, step.
                local = frame.f_locals
                step = _int_or_none(local.get("begin_step", local.get("step")))
                if name == "predict" and code.co_filename.replace("\\", "/").endswith(KERAS3.functions_file):
                    # Whether its rows could be padded (fix kind keras-pad-rows), read while predict runs.
                    rows = predict_rows(model, local)
                    # Its last rows, kept for asking the live model once the program has finished.
                    remember_predict(model, local)
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
        rows=rows,
    )
    return info, model


def model_group(model: Any, info: KerasInfo) -> str:
    """Which report row a model's traces go to: its build (or load) site and its architecture.

    Models built at one place with one architecture share a row, so a model rebuilt per request
    shows up as one row that retraces; models built elsewhere, or with other layers (an encoder
    and a decoder, the architectures of a tutorial, a grid search), get rows of their own.
    Fixed at a model's first trace: a model that creates its weights later keeps its row.
    """
    if model is None:
        return f"{info.model_class} {info.model}"
    try:
        known = _groups.get(model)
    except TypeError:  # an unhashable model: a row by name
        return f"{info.model_class} {info.model}"
    if known is not None:
        return known
    try:
        shapes = tuple(tuple(getattr(w, "shape", ())) for w in getattr(model, "weights", ()))
        kinds = tuple(type(layer).__name__ for layer in getattr(model, "layers", ()))
    except Exception:  # reading the layers must never break a trace
        shapes, kinds = (), ()
    place = info.built_at or f"name {info.model}"
    group = f"{place} {info.model_class} {len(kinds)} layers {hash(repr((kinds, shapes))) & 0xFFFFFFFF:08x}"
    _groups[model] = group
    return group


def layer_names(model: Any) -> tuple[str, ...] | None:
    """The names of a model's layers, in order; None when they cannot be read."""
    if model is None:
        return None
    try:
        return tuple(str(getattr(layer, "name", "?")) for layer in getattr(model, "layers", ()))
    except Exception:  # reading the layers must never break a trace
        return None


def mark_trained(model: Any) -> bool:
    """Remember that this model traced its train function; say whether it had before."""
    try:
        before = model in _trained
        _trained.add(model)
    except TypeError:
        return False
    return before


def was_trained(model: Any) -> bool:
    """Whether this model traced its train function while the hooks were on."""
    try:
        return model is not None and model in _trained
    except TypeError:
        return False


def is_keras_file(filename: str) -> bool:
    """Whether a source file belongs to Keras (keras or tf_keras)."""
    parts = filename.replace("\\", "/")
    return "/keras/" in parts or "/tf_keras/" in parts


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Where each Keras model was built and which ones came from load_model. Weak maps: tfretrace must
# never keep a user's model alive.
_built_at: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_loaded_models: weakref.WeakSet[Any] = weakref.WeakSet()
_groups: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_trained: weakref.WeakSet[Any] = weakref.WeakSet()


def was_loaded(model: Any) -> bool:
    """Whether this model came from keras.saving.load_model while the patches were on."""
    return model is not None and model in _loaded_models


class KerasPatches:
    """Wraps each Keras' model __init__ and load_model, now or when that Keras gets imported.

    Each Keras package is patched all or nothing: every target is looked up before any is
    replaced, and a Keras whose internals moved is left untouched, with a note saying what
    tfretrace cannot tell about its models (where they were built, whether they were loaded).
    """

    PACKAGES = ("keras", "tf_keras")

    def __init__(self) -> None:
        self._saved: dict[str, list[tuple[Any, str, Any]]] = {}
        self._finder: ImportWatcher | None = None
        self.notes: list[str] = []

    def install(self) -> None:
        """Patch each Keras that is loaded; patch the others right after their import."""
        for package in self.PACKAGES:
            # A Keras still loading (`import keras` imports TensorFlow, whose import end installs
            # these hooks) is patched by the watcher, set before its import began, at its end.
            if package in sys.modules and not _initializing(package):
                self.patch(package)
        self.watch()

    def watch(self) -> None:
        """Patch each Keras not yet imported right after its import (before TensorFlow loads too)."""
        if self._finder is None and not all(p in sys.modules for p in self.PACKAGES):
            self._finder = ImportWatcher(set(self.PACKAGES), self.patch)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        """Undo every patch and stop watching imports."""
        if self._finder is not None:
            if self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
            self._finder = None
        for saved in self._saved.values():
            for owner, name, original in reversed(saved):
                setattr(owner, name, original)
        self._saved.clear()

    def patch(self, package: str) -> None:
        """Patch one imported Keras package (idempotent); note what could not be patched."""
        flavor = flavor_of(package)
        if flavor is None or package in self._saved:
            return
        try:
            targets = _targets(flavor)
        except (ImportError, AttributeError) as exc:
            self._saved[package] = []
            note = (
                f"{package} {_version(package)}: model build sites and load_model not observed "
                f"(keras-recompile/keras-load-model need them): {type(exc).__name__}: {exc}"
            )
            if note not in self.notes:
                self.notes.append(note)
            return
        base, loaders = targets
        init = base.__init__
        saved = [(base, "__init__", init)]

        def __init__(model, *args, **kwargs):  # type: ignore[no-untyped-def]
            init(model, *args, **kwargs)
            try:
                if model not in _built_at:
                    _built_at[model] = call_site(sys._getframe(1)) or "?"
            except Exception:  # bookkeeping must never break model construction
                pass

        wrapped = [(base, "__init__", __init__)]
        for module in loaders:
            saved.append((module, "load_model", module.load_model))
            wrapped.append((module, "load_model", _wrap_load(module.load_model)))
        self._saved[package] = saved
        for owner, name, replacement in wrapped:
            setattr(owner, name, replacement)


def _targets(flavor: Flavor) -> tuple[Any, list[Any]]:
    """The model base class and the load_model modules of a Keras flavor; raises if any moved."""
    base_module = importlib.import_module(flavor.base_module)
    base = next((getattr(base_module, n) for n in flavor.base_classes if hasattr(base_module, n)), None)
    if base is None:
        raise AttributeError(f"{flavor.base_module} has none of {', '.join(flavor.base_classes)}")
    loaders = [importlib.import_module(name) for name in flavor.load_modules]
    for module in loaders:
        if not callable(getattr(module, "load_model", None)):
            raise AttributeError(f"{module.__name__} has no load_model")
    return base, loaders


def _wrap_load(load: Any) -> Any:
    def load_model(*args, **kwargs):  # type: ignore[no-untyped-def]
        model = load(*args, **kwargs)
        with contextlib.suppress(TypeError):  # an unhashable model cannot be tracked
            _loaded_models.add(model)
        return model

    return load_model


def _version(package: str) -> str:
    return str(getattr(sys.modules.get(package), "__version__", "?"))


def _method_from_code(code: CodeType) -> str:
    qualname = getattr(code, "co_qualname", code.co_name)
    for part, method in (("predict", "predict"), ("test", "evaluate"), ("train", "fit")):
        if f"make_{part}_function" in qualname:
            return method
    return code.co_name
