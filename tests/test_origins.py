"""Real TensorFlow/Keras: traces TensorFlow and Keras make for the user's calls (issue 10, point 3).

tf.vectorized_map called eagerly, a function restored by tf.saved_model.load, tf.saved_model.save
and model.export, tf.data pipelines rebuilt every epoch: each is reported at the user's line,
counted like TensorFlow counts it (every call of TensorFlow's trace function for that code),
with its own cause and expected flag, and advice at the user's level.
"""

from __future__ import annotations

import collections
import inspect
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")
keras = tf.keras  # the Keras TensorFlow users get: Keras 3, Keras 2.15, or tf_keras

import tfretrace  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402

pytestmark = pytest.mark.tf

HERE = Path(__file__)
SITE = os.path.relpath(HERE)


def line(marker: str) -> str:
    """``tests/test_origins.py:N`` of the line ending in ``# <marker>``."""
    for number, text in enumerate(HERE.read_text(encoding="utf-8").splitlines(), 1):
        if text.rstrip().endswith(f"# <{marker}>"):
            return f"{SITE}:{number}"
    raise AssertionError(marker)


@pytest.fixture
def tf_traces(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[tuple[str, str]]:
    """What TensorFlow really traced: (file name, code name) per graph its trace function built.

    Counted below TensorFlow's _create_concrete_function (one FuncGraph per trace), so it sees
    every trace, the ones tfretrace hides included, and never stands between tfretrace's hook
    and the user's frames, whatever was installed first.
    """
    from tensorflow.python.framework import func_graph as func_graph_module

    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    original = func_graph_module.func_graph_from_py_func

    def counting(*args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        if caller.f_code.co_name == "_create_concrete_function":  # not cond/while branch graphs
            seen[_code_of(caller.f_locals["tracing_options"].python_function)] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(func_graph_module, "func_graph_from_py_func", counting)
    return seen


def _code_of(function: Any) -> tuple[str, str]:
    for _ in range(20):
        if hasattr(function, "__wrapped__"):
            function = function.__wrapped__
        elif hasattr(function, "__func__"):
            function = function.__func__
        elif not hasattr(function, "__code__") and callable(function):  # an object: its class's __call__
            function = type(function).__call__
        else:
            break
    code = getattr(function, "__code__", None)
    return ("?", "?") if code is None else (os.path.basename(code.co_filename), code.co_name)


def watched() -> Any:
    return tfretrace.watch(warn=False, log=False)


def causes(report: FunctionReport) -> list[str]:
    return [e.cause for e in report.events]


def expected(report: FunctionReport) -> list[bool]:
    return [e.expected for e in report.events]


def advice(report: FunctionReport) -> list[tuple[str, str]]:
    """(cause, kind) of each plan step; framework causes only ever get statements (advice)."""
    assert all(not step["edits"] for step in report.plan)
    return [(step["cause"], step["kind"]) for step in report.plan]


# -------------------------------------------------------------------------------------------------
# tf.vectorized_map / pfor called eagerly


def test_vectorized_map_called_eagerly_is_one_trace_per_call(tf_traces: Any) -> None:
    with watched() as mon:
        for _ in range(4):
            tf.vectorized_map(lambda row: row * 2.0, tf.ones([3, 2]))  # <vmap>
    session = mon.session()
    assert session.internal_errors == 0
    fn = session.function("tf.vectorized_map")
    assert fn.location == line("vmap")
    assert fn.traces == tf_traces["control_flow_ops.py", "f"] == 4
    assert fn.calls == 4
    assert causes(fn) == ["first-trace"] + ["pfor-per-call"] * 3
    assert expected(fn) == [True, False, False, False]
    assert fn.retraces == 3
    assert {e.call_site for e in fn.events} == {line("vmap")}
    assert advice(fn) == [("pfor-per-call", "statement")]
    assert all(e.fix is None for e in fn.events)  # advice is never shown as a checked fix


def test_vectorized_map_inside_a_tf_function_is_traced_into_its_graph(tf_traces: Any) -> None:
    # The advice: one tf.function around the call; pfor is then part of its one trace.
    @tf.function
    def apply(x: Any) -> Any:
        return tf.vectorized_map(lambda row: row * 2.0, x)

    with watched() as mon:
        for _ in range(4):
            apply(tf.ones([3, 2]))
    session = mon.session()
    assert [f.name.rsplit(".", 1)[-1] for f in session.functions] == ["apply"]
    assert session.function("apply").traces == 1 == apply.experimental_get_tracing_count()
    assert tf_traces["control_flow_ops.py", "f"] == 0
    assert session.total_retraces == 0


def test_an_error_classifying_a_trace_is_counted_and_the_program_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace._tf import hooks

    def broken(*args: Any) -> Any:
        raise RuntimeError("classifier broke")

    monkeypatch.setattr(hooks, "origin_of", broken)
    with watched() as mon:
        out = tf.vectorized_map(lambda row: row * 2.0, tf.ones([3, 2]))
    assert out.numpy().tolist() == [[2.0, 2.0]] * 3
    session = mon.session()
    assert session.internal_errors == 1
    assert "classifier broke" in session.internal_error_messages[0]


# -------------------------------------------------------------------------------------------------
# A function restored by tf.saved_model.load


class Doubler(tf.Module):  # type: ignore[misc]
    @tf.function
    def f(self, x: Any) -> Any:
        return x * 2.0


class OpenDoubler(tf.Module):  # type: ignore[misc]
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(self, x: Any) -> Any:
        return x * 2.0


def _saved(*lengths: int, signature: bool = False) -> str:
    path = tempfile.mkdtemp()
    module = OpenDoubler() if signature else Doubler()
    for n in lengths:
        module.f(tf.ones([n]))
    tf.saved_model.save(module, path)
    return path


def test_restored_function_traces_for_each_new_input_signature(tf_traces: Any) -> None:
    path = _saved(2, 3, 4)
    tf_traces.clear()
    with watched() as mon:
        loaded = tf.saved_model.load(path)
        for n in (2, 3, 4, 3):
            loaded.f(tf.ones([n]))  # <restored>
        with pytest.raises(ValueError):
            loaded.f(tf.ones([7]))  # <restored-no-match>
    fn = mon.session().function("f (restored by tf.saved_model.load)")
    assert fn.location == line("restored")
    # TensorFlow: one trace per new signature, and a failed one for a signature never saved.
    assert tf_traces["function_deserialization.py", "restored_function_body"] == 4
    assert fn.traces == 3 and fn.failed_traces == 1
    assert fn.calls == 5
    assert causes(fn) == ["first-trace", "restored-new-signature", "restored-new-signature"]
    assert expected(fn) == [True, False, False]
    assert [e.call_site for e in fn.events] == [line("restored")] * 3
    assert [c.path for e in fn.events[1:] for c in e.changes] == ["x", "x"]
    assert advice(fn) == [("restored-new-signature", "statement")]
    assert "tf.TensorSpec(shape=[None], dtype=tf.float32)" in (fn.plan[0]["code"] or "")


def test_restored_function_saved_with_an_open_signature_traces_once(tf_traces: Any) -> None:
    # What the advice says: save with an input_signature open where the calls vary.
    path = _saved(signature=True)
    tf_traces.clear()
    with watched() as mon:
        loaded = tf.saved_model.load(path)
        for n in (2, 3, 4):
            loaded.f(tf.ones([n]))
    fn = mon.session().function("f (restored by tf.saved_model.load)")
    assert fn.traces == tf_traces["function_deserialization.py", "restored_function_body"] == 1
    assert causes(fn) == ["first-trace"] and fn.retraces == 0


def test_restored_function_called_before_the_monitor_keeps_its_causes() -> None:
    path = _saved(2, 3, 4)
    loaded = tf.saved_model.load(path)
    loaded.f(tf.ones([2]))
    loaded.f(tf.ones([3]))
    with watched() as mon:
        loaded.f(tf.ones([4]))  # <restored-late>
    fn = mon.session().function("f (restored by tf.saved_model.load)")
    assert causes(fn) == ["first-trace", "restored-new-signature", "restored-new-signature"]
    assert [e.earlier for e in fn.events] == [True, True, False]
    assert fn.events[-1].call_site == line("restored-late") and fn.retraces == 2


def test_saved_model_loaded_per_call_traces_again(tf_traces: Any) -> None:
    path = _saved(2)
    tf_traces.clear()
    with watched() as mon:
        for _ in range(3):
            tf.saved_model.load(path).f(tf.ones([2]))  # <reload>
    fn = mon.session().function("f (restored by tf.saved_model.load)")
    assert fn.traces == tf_traces["function_deserialization.py", "restored_function_body"] == 3
    assert causes(fn) == ["first-trace", "restored-reloaded", "restored-reloaded"]
    assert expected(fn) == [True, False, False]
    assert {e.call_site for e in fn.events} == {line("reload")}
    assert advice(fn) == [("restored-reloaded", "statement")]


# -------------------------------------------------------------------------------------------------
# tf.saved_model.save and model.export


def test_saved_model_save_traces_each_signature_again_expected(tf_traces: Any) -> None:
    module = Doubler()
    with watched() as mon:
        module.f(tf.ones([2]))
        module.f(tf.ones([3]))
        tf.saved_model.save(module, tempfile.mkdtemp())  # <save>
        tf.saved_model.save(module, tempfile.mkdtemp())  # <save-again>
    fn = mon.session().function("Doubler.f")
    # Each signature is written again by the first save (the second finds them cached in the save
    # context); TensorFlow's own saver functions (_traced_save, _traced_restore) stay hidden.
    assert tf_traces["functional_saver.py", "_traced_save"] == 2
    assert fn.traces == tf_traces["test_origins.py", "f"] == 4
    assert causes(fn) == ["first-trace", "shape-changed", "saved-model-export", "saved-model-export"]
    assert expected(fn) == [True, False, True, True]
    assert [e.call_site for e in fn.events[2:]] == [line("save")] * 2
    assert fn.retraces == 1
    # The serialization traces do not break the plan's replay: the shape fix is still predicted,
    # and with one input_signature the save writes one signature.
    kinds = [step["kind"] for step in fn.plan]
    assert "statement" not in kinds and fn.plan[-1]["final"]
    assert fn.plan[0]["traces_before"] == 4 and fn.plan[-1]["traces_after"] == 2


class Classifier(tf.Module):
    def __init__(self) -> None:
        self.w = tf.Variable(tf.zeros([784, 10]))

    @tf.function
    def __call__(self, x: Any) -> Any:
        return tf.matmul(x, self.w)


def test_a_new_shape_an_exported_wrapper_causes_inside_save_is_a_shape_retrace() -> None:
    # The serving wrapper's input_signature calls the model with (None, 784) inside the save:
    # a trace no earlier one covered, made during saving; only the save's re-traces of existing
    # signatures are the expected serialization traces.
    model = Classifier()

    @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32)])
    def serve(x: Any) -> Any:
        return {"logits": model(x)}

    with watched() as mon:
        for _ in range(3):
            model(tf.ones([32, 784]))
        tf.saved_model.save(model, tempfile.mkdtemp(), signatures={"serving_default": serve})  # <wrapper-save>
    fn = mon.session().function("Classifier.__call__")
    assert fn.traces == model.__call__.experimental_get_tracing_count() == 4
    assert causes(fn) == ["first-trace", "shape-changed", "saved-model-export", "saved-model-export"]
    assert expected(fn) == [True, False, True, True] and fn.retraces == 1
    retrace = fn.events[1]
    assert retrace.call_site == line("wrapper-save") and "saving" in (retrace.note or "")
    shape = [(c.path, c.before, c.after) for c in retrace.changes if c.path == "x"]
    assert shape == [("x", "(32, 784)", "(None, 784)")]
    # A generalized signature removes it: predicted 4 -> 2, and TensorFlow agrees.
    step = fn.plan[-1]
    assert (step["kind"], step["traces_before"], step["traces_after"]) == ("input-signature", 4, 2)
    assert "shape=[None, 784]" in step["code"]

    class Fixed(Classifier):
        @tf.function(input_signature=[tf.TensorSpec(shape=[None, 784], dtype=tf.float32)])
        def __call__(self, x: Any) -> Any:
            return tf.matmul(x, self.w)

    fixed = Fixed()

    @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32)])
    def serve_fixed(x: Any) -> Any:
        return {"logits": fixed(x)}

    for _ in range(3):
        fixed(tf.ones([32, 784]))
    tf.saved_model.save(fixed, tempfile.mkdtemp(), signatures={"serving_default": serve_fixed})
    assert fixed.__call__.experimental_get_tracing_count() == 2


def test_the_input_signature_fix_predicted_for_a_saved_function_is_what_tensorflow_traces(tf_traces: Any) -> None:
    module = OpenDoubler()
    with watched() as mon:
        module.f(tf.ones([2]))
        module.f(tf.ones([3]))
        tf.saved_model.save(module, tempfile.mkdtemp())
    fn = mon.session().function("OpenDoubler.f")
    assert fn.traces == tf_traces["test_origins.py", "f"] == 2
    assert causes(fn) == ["first-trace", "saved-model-export"] and fn.retraces == 0


def test_a_save_made_before_the_monitor_is_read_as_the_expected_serialization_trace() -> None:
    # The cache keeps the save's trace (its context has the save's variable policy): read as an
    # earlier trace, it is the serialization trace, not a context change to fix.
    module = Doubler()
    module.f(tf.ones([2]))
    tf.saved_model.save(module, tempfile.mkdtemp())
    with watched() as mon:
        module.f(tf.ones([3]))
    fn = mon.session().function("Doubler.f")
    assert causes(fn) == ["first-trace", "saved-model-export", "shape-changed"]
    assert [e.earlier for e in fn.events] == [True, True, False]
    assert expected(fn) == [True, True, False] and fn.retraces == 1


def test_listing_concrete_functions_for_serialization_is_the_expected_export_trace() -> None:
    # What SavedModel export calls, called directly (outside a save context): TensorFlow
    # traces each signature again (its specs carry the argument names). Those are the
    # serialization traces, never "unexplained".
    module = Doubler()
    with watched() as mon:
        module.f(tf.ones([2]))
        module.f(tf.ones([3]))
        listed = module.f._list_all_concrete_functions_for_serialization()
    fn = mon.session().function("Doubler.f")
    assert len(listed) == 2
    assert fn.traces == module.f.experimental_get_tracing_count() == 4
    assert causes(fn) == ["first-trace", "shape-changed", "saved-model-export", "saved-model-export"]
    assert expected(fn) == [True, False, True, True] and fn.retraces == 1


def test_keras_export_is_reported_at_the_export_call_and_expected(tf_traces: Any) -> None:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)], name="clf")
    model(tf.ones([1, 3]))
    quiet = {"verbose": False} if "verbose" in inspect.signature(model.export).parameters else {}  # Keras 3
    tf_traces.clear()
    with watched() as mon:
        model.export(tempfile.mkdtemp(), **quiet)  # <export>
        model.export(tempfile.mkdtemp(), **quiet)  # <export-again>
    session = mon.session()
    # Nothing located in Keras' source, and so no fix into it.
    assert [f.location for f in session.functions] == [line("export"), line("export-again")]
    keras_traces = sum(n for (file, name), n in tf_traces.items() if name in ("__call__", "serving_default"))
    # Per export: the serve endpoint before and inside the save (Keras 2, and Keras 3 up to 3.6);
    # later Keras 3 adds serving_default twice (8 in all on 3.15).
    assert sum(f.traces for f in session.functions) == keras_traces >= 4
    for fn, site in zip(session.functions, (line("export"), line("export-again"))):
        assert fn.name == "clf.export"
        assert set(causes(fn)) == {"saved-model-export"} and all(expected(fn))
        assert {e.call_site for e in fn.events} == {site}
        assert fn.retraces == 0 and fn.plan == ()


# -------------------------------------------------------------------------------------------------
# tf.data pipelines


def parse(x: Any) -> Any:
    return x * 2


def test_dataset_rebuilt_every_epoch_traces_its_functions_again(tf_traces: Any) -> None:
    with watched() as mon:
        for _ in range(3):
            ds = tf.data.Dataset.range(4).map(parse).filter(lambda x: x > 0)  # <pipeline>
            for _ in ds:
                pass
    session = mon.session()
    assert tf_traces["structured_function.py", "wrapped_fn"] == 6
    mapped = session.function("Dataset.map(parse)")
    kept = session.function("Dataset.filter(<lambda>)")
    for fn in (mapped, kept):
        assert fn.location == line("pipeline")
        assert fn.traces == 3 and fn.calls == 3  # a tf.data row's calls are the pipeline builds
        assert causes(fn) == ["first-trace", "data-pipeline-rebuilt", "data-pipeline-rebuilt"]
        assert expected(fn) == [True, False, False]
        assert {e.call_site for e in fn.events} == {line("pipeline")}
        # tfretrace fix builds the pipeline once, before the loop (issue 18's hoist-pipeline edit).
        assert [(s["cause"], s["kind"], s["by"], s["traces_before"], s["traces_after"]) for s in fn.plan] == [
            ("data-pipeline-rebuilt", "hoist-pipeline", "tfretrace", 3, 1)]


def _make_ds(values: Any) -> Any:
    return tf.data.Dataset.from_tensor_slices(values).map(parse).batch(2)  # <helper>


def test_one_helper_building_pipelines_of_different_data_is_not_a_rebuild(tf_traces: Any) -> None:
    # make_ds(train), make_ds(val), make_ds(test): three datasets, each built once. Only the
    # same data built into the pipeline again (train, a second time) is a rebuild.
    import numpy as np

    with watched() as mon:
        for values in (np.arange(8), np.arange(8, 14), np.arange(20, 24)):
            _make_ds(values)
        _make_ds(np.arange(8))
    fn = mon.session().function("Dataset.map(parse)")
    assert fn.traces == tf_traces["structured_function.py", "wrapped_fn"] == 4
    assert causes(fn) == ["first-trace", "first-trace", "first-trace", "data-pipeline-rebuilt"]
    assert expected(fn) == [True, True, True, False] and fn.retraces == 1
    assert {e.call_site for e in fn.events} == {line("helper")}


_RAN: list[int] = []


def doubled(x: Any) -> Any:
    _RAN.append(1)  # its Python runs once per trace TensorFlow makes of it
    return x * 2


def _generated(first: int, last: int) -> Any:
    def rows() -> Any:
        yield from range(first, last)

    data = tf.data.Dataset.from_generator(rows, output_signature=tf.TensorSpec((), tf.int64))
    return data.map(doubled).batch(2)  # <generated>


def test_one_helper_building_pipelines_of_different_generators_is_not_a_rebuild() -> None:
    # A generator's data is not in the pipeline's tensors (from_generator holds a constant 0 and calls the
    # Python generator): the generator's code and the plain values it closes over tell the datasets apart.
    with watched() as mon:
        for first, last in ((0, 8), (8, 12), (12, 14)):
            _generated(first, last)
        _generated(0, 8)
    fn = mon.session().function("Dataset.map(doubled)")
    assert fn.traces == len(_RAN) == 4
    assert causes(fn) == ["first-trace", "first-trace", "first-trace", "data-pipeline-rebuilt"]
    assert expected(fn) == [True, True, True, False] and fn.retraces == 1


def test_dataset_built_once_is_one_expected_trace_and_keras_pipelines_stay_hidden(tf_traces: Any) -> None:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = tf.ones([8, 3])
    with watched() as mon:
        ds = tf.data.Dataset.range(4).map(parse)  # <built-once>
        for _ in range(3):
            for _ in ds:
                pass
        model.fit(x, tf.ones([8, 1]), epochs=1, verbose=0)
        model.fit(x, tf.ones([8, 1]), epochs=1, verbose=0)
    session = mon.session()
    fn = session.function("Dataset.map(parse)")
    assert fn.traces == 1 and causes(fn) == ["first-trace"] and fn.location == line("built-once")
    # Keras' own data adapters build pipelines in fit: theirs, not the user's.
    assert [f.name for f in session.functions if f.name.startswith("Dataset.")] == ["Dataset.map(parse)"]
