"""Traces of TensorFlow's and Keras' own code made for one of the user's calls, and the row each belongs to."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from types import CodeType, FrameType
from typing import Any

from tfretrace._tf.data_source import closure_fingerprint, fingerprint
from tfretrace._tf.frames import _closure_value, _is_tf_internal, call_site, innermost_code
from tfretrace._tf.keras import is_keras_file, is_keras_functions_file
from tfretrace._tf.types import static_name

# Origin kinds: the user's call that made TensorFlow or Keras trace code of its own.
PFOR = "pfor"  # tf.vectorized_map / tf.pfor called eagerly: a new tf.function per call
RESTORED = "restored"  # a function restored by tf.saved_model.load, called with new inputs
DATA = "data"  # a tf.data map/filter/... function, traced when the pipeline is built
EXPORT = "export"  # Keras code traced to write a SavedModel (model.export, serving_default)

# How far up the stack the user's call is looked for: these calls are a few frames deep in
# TensorFlow, never hundreds (a deep stack is cut here rather than walked on every trace).
_MAX_FRAMES = 80


@dataclass(frozen=True)
class Origin:
    """The user's call behind a trace of framework code: its kind, the row's name and key."""

    kind: str
    name: str
    site: str | None
    key: tuple[str, int, str]
    # DATA: a fingerprint of what the pipeline is built from (data_source), None if unknown.
    source: str | None = None


def origin_of(options: Any, caller: FrameType, user: bool) -> Origin | None:
    """The user's call that made TensorFlow or Keras trace this code, or None.

    ``user`` says whether the traced code is the user's (is_user_trace): then only Keras code
    traced for a SavedModel has an origin. None for everything else: TensorFlow's and Keras'
    own helper traces that no call of the user's explains stay hidden.
    """
    if options.function_cache is None:
        return None
    function = options.python_function
    code, qualname = innermost_code(function)
    if code is None:
        return None
    filename = code.co_filename.replace("\\", "/")
    if user:
        # Keras' train/test/predict functions are closures in its trainer file (keras_info
        # attributes them); Keras 2's Model.__call__ lives in that same file.
        if not is_keras_file(filename) or (is_keras_functions_file(filename) and "<locals>" in qualname):
            return None
        return _export(caller)
    if filename.endswith("/parallel_for/control_flow_ops.py") and code.co_name == "f":
        name = "tf.vectorized_map" if _frame(caller, "vectorized_map", "/parallel_for/") else "tf.pfor"
        return _at_site(PFOR, name, caller)
    if filename.endswith("/saved_model/function_deserialization.py") and code.co_name == "restored_function_body":
        return _restored(function, caller)
    if filename.endswith("/data/ops/structured_function.py") and code.co_name == "wrapped_fn":
        return _dataset(caller)
    return None


def saving(caller: FrameType | None = None) -> bool:
    """Whether tf.saved_model.save (or model.export, which calls it) is running on this thread,
    or, above ``caller``, what the save calls to list a function's signatures for serialization.

    ``Function._list_all_concrete_functions_for_serialization`` traces each signature again
    (its specs carry the argument names); called by a user or a library outside a save, those
    are the same serialization traces.
    """
    module = sys.modules.get("tensorflow.python.saved_model.save_context")
    if module is not None and module.in_save_context():
        return True
    return caller is not None and _frame(
        caller, "_list_all_concrete_functions_for_serialization", "/eager/polymorphic_function/"
    ) is not None


def _at_site(kind: str, name: str, caller: FrameType) -> Origin:
    # One row per call site: each line calling tf.vectorized_map (or building a pipeline) is one
    # thing to fix, wherever the code it runs was defined.
    site = call_site(caller)
    return Origin(kind, name, site, (f"<{kind}>", 0, f"{name} at {site or '?'}"))


def _restored(function: Any, caller: FrameType) -> Origin | None:
    # The saved function's concrete function names (``__inference_f_12``) are the same in every
    # load of one SavedModel, and differ between SavedModels: one row per saved function.
    for _ in range(10):  # TensorFlow's decorators around restored_function_body
        if getattr(getattr(function, "__code__", None), "co_name", None) == "restored_function_body":
            break
        function = getattr(function, "__wrapped__", None)
    if function is None:
        return None
    saved = _closure_value(function, "saved_function")
    names = tuple(sorted(str(n) for n in getattr(saved, "concrete_functions", ()) or ()))
    if not names:
        return None
    match = re.fullmatch(r"__inference_(.+?)_\d+", names[0])
    short = match.group(1) if match else names[0]
    site = call_site(caller)
    return Origin(RESTORED, f"{short} (restored by tf.saved_model.load)", site, ("<restored>", 0, " ".join(names)))


def _dataset(caller: FrameType) -> Origin | None:
    # The user's function and the transformation are locals of StructuredFunctionWrapper.__init__,
    # a few frames up. A pipeline TensorFlow or Keras builds with a function of its own (Keras'
    # data adapters in fit/predict) is theirs, not the user's: hidden.
    frame = _frame(caller, "__init__", "/data/ops/structured_function.py")
    if frame is None:
        return None
    func = frame.f_locals.get("func")
    code, qualname = innermost_code(func)
    if code is None or _is_tf_internal(code.co_filename) or is_keras_file(code.co_filename.replace("\\", "/")):
        return None
    transformation = str(frame.f_locals.get("transformation_name") or "Dataset.map()")
    short = qualname.rsplit("<locals>.", 1)[-1]  # parse, <lambda>, Parser.parse
    origin = _at_site(DATA, f"{transformation.removesuffix('()')}({short})", caller)
    dataset = frame.f_locals.get("dataset")  # the dataset the function is applied to
    source = None if dataset is None else fingerprint(dataset)
    if source is not None:
        # The same data mapped with other closure values (a column name) is another pipeline.
        source += closure_fingerprint(func)
    return replace(origin, source=source)


def _export(caller: FrameType) -> Origin | None:
    # Keras code traced inside a save, or inside Keras' export (which traces its endpoints before
    # calling tf.saved_model.save): one row per saving call of the user's.
    # Keras 3 exports in export_saved_model; Keras 2 and tf_keras in export_model.
    export = _frame(caller, "export_saved_model", "/export/") or _frame(caller, "export_model", "/export/")
    if export is not None:
        # Named like the Keras rows (clf.fit, clf.predict): the model's name, read as a plain
        # attribute so that no user property runs here.
        name = static_name(export.f_locals.get("model"))
        return _at_site(EXPORT, f"{name or 'model'}.export", caller)
    if _frame(caller, "write_out", "/export/") is not None:
        return _at_site(EXPORT, "ExportArchive.write_out", caller)
    if saving(caller):
        return _at_site(EXPORT, "tf.saved_model.save", caller)
    return None


def _frame(frame: FrameType | None, name: str, path_part: str) -> FrameType | None:
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        code: CodeType = frame.f_code
        if code.co_name == name and path_part in code.co_filename.replace("\\", "/"):
            return frame
        frame = frame.f_back
    return None

