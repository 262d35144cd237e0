"""Real retracing reports from GitHub, reproduced in a few lines on TF 2.21 / Keras 3.

Each test cites the issue, summarises what the maintainers (or the thread) found, reproduces
the situation with tiny inputs and asserts that tfretrace names that cause: the cause slug, the
argument path, and trace counts equal to TensorFlow's ``experimental_get_tracing_count()``.
Where TF 2.21 / Keras 3 behaves differently from the old report, the test asserts today's
behaviour and the docstring says so. See docs/real-reports.md for the summary table.
Keras' functions are found by role and model (tests/keras_roles.py), so the same reproductions
run on every Keras of the test matrix; where Keras 2 behaves differently the test says how.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")
keras = tf.keras  # the Keras TensorFlow users get: Keras 3, Keras 2.15, or tf_keras
np = pytest.importorskip("numpy")

import tfretrace  # noqa: E402
from keras_roles import batch_step, input_path, is_keras2, keras_row, keras_rows, keras_version, tf_counts  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402
from tfretrace.records.session import Session  # noqa: E402

pytestmark = pytest.mark.tf

KERAS2 = is_keras2(keras)
INPUT = input_path(keras)
# The Keras-specific slug for "a new model traced its functions again"; new-function-object is
# what the monitor reported before the Keras causes landed.
NEW_MODEL = {"keras-new-model", "new-function-object"}


@contextmanager
def monitored(*, keep_tf_warning: bool = False) -> Iterator[list[Session]]:
    """``with monitored() as out:`` ... then ``out[0]`` is the session."""
    out: list[Session] = []
    with tfretrace.watch(warn=False, log=False, keep_tf_warning=keep_tf_warning) as mon:
        yield out
    out.append(mon.session())
    assert out[0].internal_errors == 0, out[0].internal_error_messages


def find(session: Session, name: str) -> FunctionReport:
    """The report whose qualname is ``name`` or ends with ``.<name>`` (functions local to a test)."""
    for report in session.functions:
        if report.name == name or report.name.endswith("." + name):
            return report
    raise KeyError(f"{name!r} not in {[r.name for r in session.functions]}")


def causes(report: FunctionReport) -> list[str]:
    return [e.cause for e in report.events]


def change_paths(report: FunctionReport, index: int) -> list[str]:
    return [c.path for c in report.events[index].changes]


@contextmanager
def tf_warnings() -> Iterator[list[str]]:
    """Collect TensorFlow's own "triggered tf.function retracing" warnings."""
    messages: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if "triggered tf.function retracing" in text:
                messages.append(text)

    handler = Grab()
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def tiny_model(features: int = 4, outputs: int = 1) -> Any:
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(outputs)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def sequence_model() -> Any:
    inputs = keras.Input((None, 3))
    outputs = keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model


# ---------------------------------------------------------------------------------------------


def test_tf_32157_python_int_step_argument() -> None:
    """tensorflow/tensorflow#32157: "non-tensor argument to target of tf.function logging slows
    down training".

    Diagnosis (kkimdev): not a bug; a Python value passed to a tf.function is part of the trace
    key, so passing the global step as a Python int retraces on every step. "Many users are
    hitting this": the maintainers added the "too-many-retrace" warning (PR #32258) in response.
    Unchanged on TF 2.21.
    """

    @tf.function
    def train_step(x, step):
        loss = tf.reduce_sum(x * x)
        return tf.cond(tf.equal(step % 10, 0), lambda: loss, lambda: loss * 0.0)

    x = tf.ones([3])
    with monitored() as out:
        for step in range(4):
            train_step(x, step)
    report = find(out[0], "train_step")
    assert causes(report) == ["first-trace"] + ["python-value-changed"] * 3
    assert all(change_paths(report, i) == ["step"] for i in (1, 2, 3))
    assert report.traces == train_step.experimental_get_tracing_count() == 4
    # tfretrace's plan: the maintainers' fix (pass a tensor), predicted to leave one trace.
    plan = report.plan[0]
    assert (plan["kind"], plan["traces_before"], plan["traces_after"]) == ("tensor-argument", 4, 1)
    assert "tf.constant(step, dtype=tf.int32)" in (plan["code"] or "")
    # The fix the thread points to: pass a tensor; one trace for all steps, as predicted.
    with monitored() as out:
        for step in range(4):
            train_step(x, tf.constant(step))
    # The four Python-int traces are still in the function's cache (read as earlier traces): the
    # fixed calls add one trace, and the steps after it none.
    fixed = find(out[0], "train_step")
    assert (fixed.traces, fixed.earlier_traces) == (5, 4) == (train_step.experimental_get_tracing_count(), 4)
    assert [e.cause for e in fixed.events if not e.earlier] == ["structure-changed"]


def test_tf_42441_rapidly_creating_new_models() -> None:
    """tensorflow/tensorflow#42441: "Erroneously triggering tf.function retracing warnings when
    rapidly creating new TF models" (evolutionary search; "warnings should only trigger for the
    same model").

    Diagnosis: closed as expected behaviour. TF's frequent-tracing detector is keyed by the
    Python code of the function, which every model's predict function shares, so traces of
    different models are counted together. Same on TF 2.21 / Keras 3: each model's
    predict_function traces exactly once; tfretrace reports one trace per new model with an
    identical signature (nothing to fix per model; build fewer models or call the model
    directly).
    """
    x = np.ones((2, 4), "float32")
    models = []
    with monitored() as out:
        for _ in range(6):
            model = tiny_model()
            model.predict(x, verbose=0)
            models.append(model)
    report = keras_row(out[0], "predict")
    assert report.objects == 6 and report.traces == 6
    assert causes(report)[0] == "first-trace"
    assert set(causes(report)[1:]) <= NEW_MODEL
    assert all(not e.changes for e in report.events)  # identical signature each time
    assert [m.predict_function.experimental_get_tracing_count() for m in models] == [1] * 6


def test_tf_43555_spurious_warning_when_redefining_a_layer() -> None:
    """tensorflow/tensorflow#43555: "Spurious tf.function retracing warnings, when developing Keras
    layer in colab".

    Re-running a notebook cell redefines the layer class; every definition has equal code, and
    TF's warning detector is keyed by that code, so a handful of re-runs trips the "5 out of the
    last 5 calls" warning although no single function ever retraced. Reproduced on TF 2.21:
    TF still warns; tfretrace attributes every trace to a new tf.function object with an
    identical signature (cause new-function-object), and each object's count is 1.
    """
    cell = textwrap.dedent(
        """
        class Scale43555(tf.Module):
            @tf.function
            def __call__(self, x):
                return x * 2.0
        """
    )
    code = compile(cell, "<colab-cell-43555>", "exec")
    x = tf.ones([2])
    layers = []
    # TensorFlow's own warning is what this report is about: keep it visible while monitoring.
    with tf_warnings() as warned, monitored(keep_tf_warning=True) as out:
        for _ in range(6):  # the cell is run six times while developing
            namespace: dict[str, Any] = {"tf": tf}
            exec(code, namespace)
            layer = namespace["Scale43555"]()
            layer(x)
            layers.append(layer)
    report = find(out[0], "Scale43555.__call__")
    assert causes(report) == ["first-trace"] + ["new-function-object"] * 5
    assert report.objects == 6 and all(not e.changes for e in report.events)
    assert [layer.__call__.experimental_get_tracing_count() for layer in layers] == [1] * 6
    assert warned, "TF 2.21 still emits its code-keyed warning here"


def test_tf_46012_new_model_per_loop_iteration() -> None:
    """tensorflow/tensorflow#46012: "tf.function retracing" when a fresh Sequential model is
    built, compiled, fit and used for predict six times in a loop.

    Diagnosis: the warning comes from ``predict_function`` being created per model (the thread
    was closed awaiting response; it is the same code-keyed counting as #42441). TF 2.21 /
    Keras 3: every model traces its train and predict functions once. Each model is trained
    here, so each has its own job: tfretrace reports no retrace (docs/keras.md), one row per
    role holding the three models (same place, same layers).
    """
    x = np.random.default_rng(0).uniform(-1, 1, size=(1, 16)).astype("float32")
    y = np.array([[0.8]], "float32")
    with monitored() as out:
        for _ in range(3):
            model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(1, activation="sigmoid")])
            model.compile(loss="mse", optimizer="adam")
            model.fit(x, y, batch_size=1, epochs=2, verbose=0)
            model.predict(x, verbose=0)
    counts = tf_counts(model, "train")  # the last model's train tf.functions
    assert out[0].total_retraces == 0
    assert len(out[0].functions) == 2
    train, predict = keras_row(out[0], "train"), keras_row(out[0], "predict")
    assert predict.objects == 3 and causes(predict) == ["first-trace"] * 3
    # Adam creates its slots on the first step: one expected variable-creation trace per model,
    # in the step that runs the optimizer (and TF's count for the last model has it).
    assert causes(train).count("variable-creation") == 3
    assert all(e.expected for e in train.events)
    assert train.traces == 3 * sum(counts.values())
    assert model.predict_function.experimental_get_tracing_count() == 1


def test_hls4ml_359_intermediate_model_per_inference() -> None:
    """fastmachinelearning/hls4ml#359: "11 out of the last 11 calls to
    Model.make_predict_function.<locals>.predict_function triggered tf.function retracing".

    Diagnosis (jmduarte): introduced by their PR #310, which *recreates* an intermediate
    ``keras.Model(inputs, layer.output)`` for every inference to read per-layer outputs; the
    fix is to create the intermediate models once. Same on TF 2.21: every intermediate model
    traces a new predict function (keras new model / new function object).
    """
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="hidden")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1, name="out")(hidden))
    x = np.ones((2, 4), "float32")

    def layer_outputs(sample):
        return [keras.Model(model.inputs, layer.output).predict(sample, verbose=0) for layer in model.layers[1:]]

    with monitored() as out:
        for _ in range(2):
            layer_outputs(x)
    # one row per probe architecture (the outputs of 'hidden' and of 'out'), each re-built
    reports = keras_rows(out[0], "predict")
    assert len(reports) == 2
    for report in reports:
        assert report.objects == report.traces == 2  # 2 inferences
        assert causes(report) == ["first-trace", "keras-new-model"]

    # The fix from the thread: build the intermediate models once.
    probes = [keras.Model(model.inputs, layer.output) for layer in model.layers[1:]]
    with monitored() as out:
        for _ in range(3):
            for probe in probes:
                probe.predict(x, verbose=0)
    assert [(f.traces, f.retraces) for f in keras_rows(out[0], "predict")] == [(1, 0), (1, 0)]


def test_tf_38561_predict_on_variable_length_inputs() -> None:
    """tensorflow/tensorflow#38561: "Unwanted tf.function retracing when using variable-length
    inputs" (predict in a loop retraces on every new length, while fit with tf.data does not).

    Diagnosis: a TF 2.2 regression in the Keras predict function, which traced with fully
    static shapes; fixed for 2.3 (maintainers asked users to upgrade; relaxed shapes).
    CHANGED on TF 2.21 / Keras 3: predict_function uses reduce_retracing, so the first new
    length retraces ONCE, generalised to a None dimension, and no later length retraces.
    """
    model = sequence_model()
    with monitored() as out:
        for length in (5, 7, 9, 11, 6):
            model.predict(np.ones((2, length, 3), "float32"), verbose=0)
    report = keras_row(out[0], "predict")
    assert causes(report) == ["first-trace", "shape-changed"]
    assert change_paths(report, 1) == [INPUT]
    assert report.events[1].traced_as is not None
    relaxed = {leaf.path: leaf.shape for leaf in report.events[1].traced_as}
    # Keras 2's predict dataset leaves the batch dimension unknown too.
    assert relaxed[INPUT] == ((None, None, 3) if KERAS2 else (2, None, 3))
    assert report.traces == model.predict_function.experimental_get_tracing_count() == 2
    assert report.calls == 5
    # tfretrace's plan: pad the varying length at the user's call site (never in Keras' source),
    # predicted to leave one trace; measured with the padding done on a fresh model.
    plan = report.plan[0]
    assert (plan["kind"], plan["traces_before"], plan["traces_after"], plan["edits"]) == ("keras-pad", 2, 1, [])
    # Lengths 9, 11 and 6 hit the relaxed trace and were never recorded: 7 is only a lower bound.
    assert "dim 1 to at least 7" in plan["summary"] and "MAX_DIM1 = 7" in plan["code"]
    padded = sequence_model()
    with monitored() as out:
        for length in (5, 7, 9, 11, 6):
            x = np.ones((2, length, 3), "float32")
            padded.predict(np.pad(x, [(0, 0), (0, 11 - length), (0, 0)]), verbose=0)
    assert keras_row(out[0], "predict").traces == 1


def test_tf_34907_38742_on_batch_methods_with_changing_batch_size() -> None:
    """tensorflow/tensorflow#34907 and #38742: "the {predict,train,test}_on_batch trace functions
    with fixed batch size" (TF 2.1rc0, and again as a regression in 2.2rc): calling
    ``predict_on_batch`` with batch sizes 1..299 retraced every time.

    Diagnosis: the *_on_batch functions were traced with a static batch dimension; fixed in 2.1,
    lost again when ``training_v2_utils.py`` was dropped (robieta), fixed later. CHANGED on
    TF 2.21 / Keras 3: reduce_retracing makes it two traces in all (the second with a None
    batch dimension), for predict_on_batch and for train_on_batch with variable widths.
    """
    model = tiny_model(features=1)
    with monitored() as out:
        for n in range(1, 9):
            model.predict_on_batch(np.ones((n, 1), "float32"))
    report = keras_row(out[0], "predict")
    assert causes(report) == ["first-trace", "shape-changed"]
    # Keras 3's predict_on_batch passes a list of batches; Keras 2 a one-batch dataset iterator.
    assert change_paths(report, 1) == ["iterator.element_spec[0]" if KERAS2 else "data[0][0]"]
    assert report.traces == model.predict_function.experimental_get_tracing_count() == 2

    # foxik's train_on_batch variant: inputs of width 1..8 into Input([None]).
    inputs = keras.Input((None,))
    summed = keras.layers.Lambda(lambda t: tf.reduce_sum(t, axis=1, keepdims=True))(inputs)
    model2 = keras.Model(inputs, keras.layers.Dense(1)(summed))
    model2.compile(optimizer="adam", loss="mse")
    with monitored() as out:
        for width in range(1, 9):
            model2.train_on_batch(np.ones((1, width), "float32"), np.ones((1, 1), "float32") * width)
    # The step that receives the batch (Keras 3.4 to 3.6 also trace an iterator step per call).
    rows = keras_rows(out[0], "train")
    step = batch_step(next(r for r in rows if "shape-changed" in causes(r)))
    # Adam builds its slots in the first step: one expected variable-creation trace.
    assert causes(step) == ["first-trace", "variable-creation", "shape-changed"]
    assert change_paths(step, 2) == ["iterator.element_spec[0]" if KERAS2 else "data[0]"]
    assert sum(r.traces for r in rows) == sum(tf_counts(model2, "train").values())


def test_tf_29075_input_signature_unseen_lengths_do_not_retrace() -> None:
    """tensorflow/tensorflow#29075: "tf.function with input_signature slower on unseen sequence
    length".

    Diagnosis: not a retrace. With a compatible input_signature the function is traced once;
    the slowdown came from the runtime specialising the graph per input shape, fixed by
    guillaumekln's PR #32080 ("Remove tensor input shape from function signature"). TF 2.21:
    one trace for every length, and tfretrace reports no retrace (per-shape work below the
    trace level, e.g. XLA compiles, is invisible to trace hooks by design).
    """

    @tf.function(input_signature=[tf.TensorSpec([None, None, 8], tf.float32)])
    def encode(x):
        return tf.reduce_sum(tf.nn.relu(x), axis=1)

    with monitored() as out:
        for length in (3, 17, 4, 29, 11):
            encode(tf.ones([2, length, 8]))
    report = find(out[0], "encode")
    assert causes(report) == ["first-trace"]
    assert report.calls == 5
    assert report.traces == encode.experimental_get_tracing_count() == 1


def test_tf_48229_concrete_functions_then_call() -> None:
    """tensorflow/tensorflow#48229: "Multiple retracing when shapes changes": after
    ``get_concrete_function`` for TensorSpec((None,), int32) and (None,) int64, calling with an
    int32 tensor of shape (2,) traced a THIRD function on TF 2.4.

    CHANGED on TF 2.21: the call dispatches to the compatible (None,) int32 trace (subtype
    dispatch), so there are two traces: the first, and the int64 one, which tfretrace reports
    as a dtype change of ``arr``.
    """

    @tf.function
    def unique_values(arr):
        values, _ = tf.unique(arr)
        return values

    with monitored() as out:
        unique_values.get_concrete_function(tf.TensorSpec((None,), tf.int32))
        unique_values.get_concrete_function(tf.TensorSpec((None,), tf.int64))
        unique_values(tf.constant([0, 2, 2], tf.int32))
    report = find(out[0], "unique_values")
    assert causes(report) == ["first-trace", "dtype-changed"]
    assert change_paths(report, 1) == ["arr"]
    assert report.traces == unique_values.experimental_get_tracing_count() == 2


def test_tf_67033_keras3_train_on_batch_retracing() -> None:
    """tensorflow/tensorflow#67033: "Tensorflow version 2.16.1 has retracing problem for
    keras.model.train_on_batch()" (Keras 3; warnings after 5-6 calls, ~100x slower than 2.15).

    The thread ended without a maintainer diagnosis (closed awaiting response; the reporter's
    workaround was to stop Keras wrapping the step in tf.function). What Keras 3 does on TF 2.21:
    train_on_batch feeds the NumPy batch straight into ``one_step_on_data``, so anything that
    changes the batch signature retraces: a new batch size (once, relaxed), a float64 array
    (dtype), and passing sample_weight after not passing it (structure: None -> tensor).
    """
    if KERAS2:
        pytest.skip("a Keras 3 report: Keras 2 batches train_on_batch through a dataset and casts float64")
    model = tiny_model()
    y8 = np.ones((8, 1), "float32")
    with monitored() as out:
        for n in (8, 8, 9, 10):
            model.train_on_batch(np.ones((n, 4), "float32"), np.ones((n, 1), "float32"))
        model.train_on_batch(np.ones((8, 4)), y8)  # float64 features
        model.train_on_batch(np.ones((8, 4), "float32"), y8, sample_weight=np.ones(8, "float32"))
    rows = keras_rows(out[0], "train")
    report = batch_step(next(r for r in rows if "shape-changed" in causes(r)))
    assert report.keras is not None and report.keras.method == "train_on_batch"
    assert causes(report) == ["first-trace", "shape-changed", "dtype-changed", "structure-changed"]
    assert change_paths(report, 1) == ["data[0]", "data[1]"]
    assert change_paths(report, 2) == ["data[0]"]
    assert change_paths(report, 3) == ["data[2]"]
    assert report.calls == 6
    assert sum(r.traces for r in rows) == sum(tf_counts(model, "train").values())


def test_keras_20369_pydataset_with_alternating_shapes() -> None:
    """keras-team/keras#20369: "Tensorflow executes slow on GPU - retracing issue?": fit on a
    PyDataset whose first batches have alternating sequence lengths is slow.

    The maintainers reproduced the slowdown and pointed at reduce_retracing; the reporter does
    not use tf.function himself. On TF 2.21 / Keras 3 there is no retracing to find: Keras
    takes the batch spec from the first two batches (lengths differ, so the time dimension
    becomes None) and both train functions trace exactly once. The per-shape cost the report
    measured lies below the trace level (on GPU, jit_compile="auto" turns XLA on, and XLA
    compiles per concrete shape), which trace hooks cannot see.
    """
    if KERAS2:
        pytest.skip("a Keras 3 report: keras.utils.PyDataset does not exist in Keras 2")

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 6

        def __getitem__(self, index):
            length = 3 + index % 3
            return np.ones((2, length, 3), "float32"), np.ones((2, 1), "float32")

    model = sequence_model()
    with monitored() as out:
        model.fit(Batches(), epochs=2, verbose=0)
    counts = tf_counts(model, "train")
    # one row for the model's training (Keras 3's step function folded into its loop function)
    report = keras_row(out[0], "train")
    assert report.traces == sum(counts.values())
    if keras_version(keras) <= (3, 15):
        assert causes(report) == ["first-trace"] * len(counts)
        assert set(counts.values()) == {1}
        assert report.retraces == 0
    else:
        # keras-nightly 3.16 feeds each PyDataset batch to the step function itself: the second
        # length retraces once (relaxed), as TensorFlow's count above agrees.
        assert [e.cause for e in report.events if not e.nested] == ["first-trace", "shape-changed"]


MIRRORED_34025 = textwrap.dedent(
    """
        import json, sys
        import numpy as np
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        import tfretrace
        keras = tf.keras
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            inputs = keras.Input((None, 3))
            model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(inputs)))

        @tf.function
        def per_replica_loss(x):
            return tf.reduce_sum(x)

        @tf.function
        def distributed_step(x):
            return strategy.run(lambda t: per_replica_loss(t), (x,))

        with tfretrace.watch(warn=False, log=False) as mon:
            for length in (5, 7, 9, 11, 5):
                model.predict(np.ones((4, length, 3), "float32"), verbose=0)
            for _ in range(3):
                distributed_step(tf.ones([4]))
        s = mon.session()
        out = {f.name: {"causes": [e.cause for e in f.events],
                        "paths": [[c.path for c in e.changes] for e in f.events],
                        "traces": f.traces, "method": f.keras.method if f.keras else None}
               for f in s.functions}
        out["_counts"] = {"predict": model.predict_function.experimental_get_tracing_count(),
                          "replica": per_replica_loss.experimental_get_tracing_count()}
        out["_errors"] = s.internal_errors
        print("RESULT" + json.dumps(out))
        """
)


@pytest.fixture(scope="module", autouse=True)
def _mirrored_34025_process() -> Iterator[subprocess.Popen[str]]:
    """Starts the #34025 reproduction in a subprocess at the start of this module, so that it
    runs beside the in-process tests (two logical CPUs must be configured before TensorFlow
    initialises its devices, which this pytest process has already done)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", MIRRORED_34025],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


@pytest.fixture(scope="module")
def mirrored_34025(_mirrored_34025_process: subprocess.Popen[str]) -> dict[str, Any]:
    """The JSON result of the #34025 reproduction."""
    stdout, stderr = _mirrored_34025_process.communicate(timeout=180)
    assert _mirrored_34025_process.returncode == 0, stderr[-3000:]
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT"))
    data: dict[str, Any] = json.loads(line[len("RESULT") :])
    assert data["_errors"] == 0
    return data


def test_tf_34025_mirrored_strategy_per_replica_traces(mirrored_34025: dict[str, Any]) -> None:
    """tensorflow/tensorflow#34025: "Understanding warning '5 out of the last 5 calls ...
    triggered tf.function retracing'" (MirroredStrategy; "11 out of the last 11 calls to
    Model.make_predict_function.<locals>.predict_function").

    Diagnosis in the thread: the warning names ``predict_function`` (a print in the distributed
    step ran once per replica, which is expected); ckkuang pointed to variable-length inputs
    (#38561), and the reporter confirmed an ``Input((128, None, 6))``. TF 2.21 / Keras 3:
    predict_function uses reduce_retracing, so new lengths cost ONE relaxed retrace; the
    per-replica step runs inside that single trace, and a tf.function called from replica code
    traces once per device (context-changed, expected). Runs in a subprocess because the two
    logical CPUs must be configured before TensorFlow starts.
    """
    data = mirrored_34025
    replica = data["per_replica_loss"]
    assert replica["causes"] == ["first-trace", "context-changed"]
    assert replica["paths"][1] == ["<context>.device"]
    assert replica["traces"] == data["_counts"]["replica"] == 2
    # The predict function itself traced twice in all (one relaxed retrace), as TF counts it.
    assert _predict(data)["traces"] == data["_counts"]["predict"] == 2


def test_tf_34025_mirrored_strategy_predict_shape_change_is_named(mirrored_34025: dict[str, Any]) -> None:
    """tensorflow/tensorflow#34025, second half: the retrace of predict_function under
    MirroredStrategy on a new sequence length should be named as a shape change of ``data[0]``.
    """
    predict = _predict(mirrored_34025)
    assert predict["causes"] == ["first-trace", "shape-changed"]
    assert all(path.startswith(INPUT) for path in predict["paths"][1])


def _predict(data: dict[str, Any]) -> dict[str, Any]:
    """The reproduction's report of Keras' predict function, found by its method."""
    found = [r for name, r in data.items() if not name.startswith("_") and r["method"] == "predict"]
    assert len(found) == 1, list(data)
    return found[0]


def _dense_model() -> Any:
    return keras.Sequential([keras.Input((784,)), keras.layers.Dense(10)])


def test_the_predict_padding_advice_runs_as_printed_and_keeps_every_row() -> None:
    # 513 rows: predict makes 16 batches of 32 and one of 1 row. The advice pads the rows up to
    # a multiple of predict's batch size and cuts the outputs back to 513.
    x = np.random.default_rng(0).random((513, 784), dtype=np.float32)
    model = _dense_model()
    with monitored() as out:
        for _ in range(2):
            model.predict(x, verbose=0)
    report = keras_row(out[0], "predict")
    if report.retraces == 0:
        pytest.skip("this Keras predicts a partial batch without a retrace: no padding advised")
    (step,) = [s for s in report.plan if s["kind"] == "keras-pad"]
    fresh = _dense_model()
    fresh.set_weights(model.get_weights())
    for _ in range(2):
        scope: dict[str, Any] = {"np": np, "model": fresh, "x": x}
        exec(step["code"], scope)  # the printed snippet, as printed
        y = scope["y"]
        assert y.shape == (513, 10)
        np.testing.assert_allclose(y, model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    # Every batch full: the fresh model's predict traced once, as predicted.
    assert fresh.predict_function.experimental_get_tracing_count() == step["traces_after"] == 1
