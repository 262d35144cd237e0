"""Real Keras (the one tf.keras is: Keras 3, or Keras 2 on TF 2.15 and with TF_USE_LEGACY_KERAS=1):
each Keras cause with its model and method, RetraceCallback in a real fit, MirroredStrategy over two
logical CPUs, and merging the sessions of two worker processes. Keras' functions are found by model
and role (tests/keras_roles.py), never by one Keras version's internal names."""

from __future__ import annotations

import inspect
import json
import logging
import os
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = tf.keras  # the Keras TensorFlow users get: Keras 3, Keras 2.15, or tf_keras

import tfretrace  # noqa: E402
import tfretrace.cli  # noqa: E402
from keras_roles import batch_step, input_path, is_keras2, keras_row, keras_rows, short_name, tf_counts  # noqa: E402
from tfretrace.keras import RetraceCallback  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402

pytestmark = pytest.mark.tf

KERAS2 = is_keras2(keras)
INPUT = input_path(keras)

X = np.ones((16, 4), "float32")
Y = np.ones((16, 2), "float32")


def watch() -> typing.ContextManager[tfretrace.Monitor]:
    return tfretrace.watch(warn=False, log=False)


def dense(name: str) -> Any:
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name=name)


def causes(fn: FunctionReport) -> list[str]:
    return [e.cause for e in fn.events]


def change_paths(fn: FunctionReport, cause: str) -> set[str]:
    return {c.path for e in fn.events if e.cause == cause for c in e.changes}


def top_level(fn: FunctionReport) -> list[str]:
    # Keras 3 traces its step function inside its loop function: one row, the nested trace folded.
    return [e.cause for e in fn.events if not e.nested and e.cause != "variable-creation"]


def without_variable_creation(fn: FunctionReport) -> list[str]:
    # Keras 2 creates the optimizer's step counter in the first train step: an expected extra trace.
    return [c for c in causes(fn) if c != "variable-creation"]


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env.pop("TFRETRACE_STRICT", None)
    return env


# -------------------------------------------------------------------------------------------------
# 1. predict on varying batch sizes


def test_predict_on_varying_batch_sizes_is_shape_changed_at_data0() -> None:
    model = dense("encoder")
    with watch() as mon:
        for n in (32, 32, 16, 50, 7):
            model.predict(np.ones((n, 4), "float32"), batch_size=32, verbose=0)
    fn = keras_row(mon.session(), "predict", "encoder")
    assert causes(fn) == ["first-trace", "shape-changed"]
    assert fn.keras_models() == ["encoder"]
    assert fn.display_name() == "encoder.predict"
    assert all(e.keras is not None and (e.keras.model, e.keras.method) == ("encoder", "predict") for e in fn.events)
    change = fn.events[1].changes[0]
    # Keras 2 batches the 16 rows into a dataset whose batch dimension is already None.
    after = "(None, 4)" if KERAS2 else "(16, 4)"
    assert (change.path, change.kind, change.before, change.after) == (INPUT, "shape", "(32, 4)", after)
    assert fn.traces == model.predict_function.experimental_get_tracing_count() == 2
    assert fn.retraces == 1


# -------------------------------------------------------------------------------------------------
# 2. a new model per loop iteration


def test_new_model_per_iteration_is_keras_new_model_with_distinct_names() -> None:
    names = ["cand0", "cand1", "cand2"]
    with watch() as mon:
        models = []
        for name in names:
            model = dense(name)
            models.append(model)
            model.predict(np.ones((8, 4), "float32"), verbose=0)
    fn = keras_row(mon.session(), "predict")
    assert causes(fn) == ["first-trace", "keras-new-model", "keras-new-model"]
    assert fn.keras_models() == names
    assert fn.objects == len(names)
    assert fn.traces == sum(m.predict_function.experimental_get_tracing_count() for m in models) == 3
    for event, name in zip(fn.events, names):
        assert event.keras is not None and (event.keras.model, event.keras.method) == (name, "predict")
    assert [e.object_index for e in fn.events] == [1, 2, 3]
    new_model_events = [e for e in fn.events if e.cause == "keras-new-model"]
    assert all(e.note is not None for e in new_model_events)
    assert fn.events[0].note is None


def test_a_target_network_used_alongside_its_online_network_is_not_a_retrace() -> None:
    # A DQN: the target network is a second model from the same function, kept in step with
    # set_weights and used next to the online one on every step. Two distinct models, each
    # traced once: no retrace, and no advice to build "the" model once.
    with watch() as mon:
        online, target = dense("online"), dense("target")  # one build_model() for both
        for model in (online, target):
            model.compile(optimizer="sgd", loss="mse")
        target.set_weights(online.get_weights())
        for step in range(3):
            q_next = target.predict(X, verbose=0)
            online.predict(X, verbose=0)
            online.fit(X, q_next, epochs=1, verbose=0)
            if step == 1:
                target.set_weights(online.get_weights())
    fn = keras_row(mon.session(), "predict")
    assert fn.keras_models() == ["target", "online"]
    assert fn.traces == sum(m.predict_function.experimental_get_tracing_count() for m in (online, target)) == 2
    assert causes(fn) == ["first-trace", "first-trace"]
    assert [e.expected for e in fn.events] == [True, True] and fn.retraces == 0
    assert fn.events[1].note is not None and fn.plan == ()


# -------------------------------------------------------------------------------------------------
# 3. compile() again between fits


def test_compile_again_is_keras_recompile_for_the_trainer_functions() -> None:
    model = dense("clf")
    model.compile("sgd", "mse")
    with watch() as mon:
        model.fit(X, Y, batch_size=8, verbose=0)
        first = tf_counts(model, "train")
        model.compile("sgd", "mse")
        model.fit(X, Y, batch_size=8, verbose=0)
        second = tf_counts(model, "train")
    session = mon.session()
    # One row for the model's training (Keras 3's step function, traced inside the loop
    # function, is folded into it: expected, counted with the trace it belongs to).
    fn = keras_row(session, "train", "clf")
    assert len(session.functions) == 1
    assert top_level(fn) == ["first-trace", "keras-recompile"]
    assert all(e.expected for e in fn.events if e.nested)
    assert fn.retraces == 1
    assert fn.keras_models() == ["clf"]
    assert fn.objects == 2 * len(second)  # new tf.functions after compile()
    assert {e.keras.method for e in fn.events if e.keras} == {"fit"}
    assert fn.traces == sum(first.values()) + sum(second.values())
    # compile() dropped the old functions: the retrace is on a new object
    assert next(e for e in fn.events if e.cause == "keras-recompile").object_index == len(second) + 1


# -------------------------------------------------------------------------------------------------
# 4. load_model per call


def test_load_model_per_call_is_keras_load_model(tmp_path: Path) -> None:
    path = tmp_path / "tiny.keras"
    dense("saved").save(path)
    with watch() as mon:
        for _ in range(2):
            model = keras.models.load_model(path)
            model.predict(np.ones((8, 4), "float32"), verbose=0)
    fn = keras_row(mon.session(), "predict", "saved")
    assert causes(fn) == ["first-trace", "keras-load-model"]
    assert fn.keras_models() == ["saved"]
    assert fn.objects == 2
    assert all(e.keras is not None and e.keras.method == "predict" for e in fn.events)
    assert fn.events[1].note is not None


# -------------------------------------------------------------------------------------------------
# 5. train_on_batch with varying lengths and float64 NumPy


def test_train_on_batch_varying_lengths_and_float64() -> None:
    model = dense("tob")
    model.compile("sgd", "mse")
    with watch() as mon:
        for n in (8, 8, 9, 10):
            model.train_on_batch(np.ones((n, 4), "float32"), np.ones((n, 2), "float32"))
        model.train_on_batch(np.ones((10, 4), "float64"), np.ones((10, 2), "float32"))
    rows = keras_rows(mon.session(), "train", "tob")
    # Keras 3.4 to 3.6 also trace an iterator step per call (a new iterator object each time),
    # folded into the same row: TensorFlow counts those traces too.
    assert sum(r.traces for r in rows) == sum(tf_counts(model, "train").values())
    fn = batch_step(next(r for r in rows if "shape-changed" in causes(r)))  # the step given the batch
    assert {e.keras.method for e in fn.events if e.keras} == {"train_on_batch"}
    assert fn.keras_models() == ["tob"]
    if KERAS2:
        # Keras 2 feeds a one-batch dataset and casts float64 to the model's float32: no retrace.
        targets = {"iterator.element_spec[0]", "iterator.element_spec[1]"}
        assert without_variable_creation(fn) == ["first-trace", "shape-changed"]
    else:
        # Keras 3 passes the NumPy arrays straight to the step function.
        assert causes(fn) == ["first-trace", "shape-changed", "dtype-changed"]
        dtype = fn.events[2].changes
        assert [(c.path, c.kind, c.before, c.after) for c in dtype] == [("data[0]", "dtype", "float32", "float64")]
        targets = {"data[0]", "data[1]"}
    assert change_paths(fn, "shape-changed") == targets
    assert len(fn.events) == 3


# -------------------------------------------------------------------------------------------------
# 6. a plain fit: variable creation is expected, built_at and epoch are recorded


def test_plain_fit_has_variable_creation_and_no_retraces() -> None:
    with watch() as mon:
        built_line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="plain")
        model.compile("adam", "mse")
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    session = mon.session()
    counts = tf_counts(model, "train")
    fn = keras_row(session, "train", "plain")
    assert len(session.functions) == 1  # Keras 3's step function is folded into the model's row
    # The step that runs the optimizer traces once more without creating variables (Keras 3's
    # one_step_on_data, Keras 2's train_function): expected, not a retrace.
    assert causes(fn).count("variable-creation") == 1
    assert change_paths(fn, "variable-creation") == {"<context>.scope_type"}
    assert fn.retraces == 0
    assert fn.main_cause is None
    assert fn.traces == sum(counts.values())
    for event in fn.events:
        assert event.keras is not None
        info = event.keras
        assert (info.model, info.method, info.epoch, info.step) == ("plain", "fit", 0, 0)
        assert event.keras.built_at is not None
        assert event.keras.built_at.endswith(f"test_keras.py:{built_line}")
    # each second counted once: the loop function's own time leaves out the nested step traces
    outer = fn.events[0]
    nested = [e for e in fn.events if e.nested]
    assert outer.total_seconds >= outer.seconds + sum(e.seconds for e in nested) * 0.99
    assert fn.trace_seconds <= outer.total_seconds * 1.01 + sum(e.seconds for e in fn.events[1:] if not e.nested)
    assert session.total_retraces == 0


# -------------------------------------------------------------------------------------------------
# 7. a user tf.function that takes a model as an argument


def test_user_function_called_with_two_models_is_object_identity() -> None:
    @tf.function
    def run_model(model: Any, x: Any) -> Any:
        return model(x)

    first, second = dense("first"), dense("second")
    with watch() as mon:
        run_model(first, tf.ones((2, 4)))
        run_model(first, tf.ones((2, 4)))
        run_model(second, tf.ones((2, 4)))
    fn = mon.session().function("run_model")
    assert causes(fn) == ["first-trace", "object-identity"]
    assert [(c.path, c.kind) for c in fn.events[1].changes] == [("model", "identity")]
    assert fn.traces == run_model.experimental_get_tracing_count() == 2
    assert fn.calls == 3
    assert fn.keras is None  # user code, not a Keras trainer function


# -------------------------------------------------------------------------------------------------
# 8. RetraceCallback in a real fit


def test_retrace_callback_across_two_fits_with_compile_between(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saved = tmp_path / "callback.json"
    callback = RetraceCallback(save_to=str(saved))
    model = dense("cb")
    model.compile("sgd", "mse")
    with caplog.at_level(logging.WARNING, logger="tfretrace"):
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=[callback])
        assert callback.epoch_retraces == [0, 0]
        assert [r for r in caplog.records if r.name == "tfretrace"] == []
        model.compile("sgd", "mse")
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=[callback])
    # the second fit's first epoch retraced the model's training once (one row: Keras 3's step
    # function is folded into its loop function's trace), the second epoch nothing
    trainers = sorted(tf_counts(model, "train"))  # Keras 3: two tf.functions, Keras 2: one
    assert callback.epoch_retraces == [0, 0, 1, 0]
    assert [e.cause for _, e in callback.retraces()] == ["keras-recompile"]
    records = [r for r in caplog.records if r.name == "tfretrace"]
    assert len(records) == 1
    assert all(r.levelno == logging.WARNING for r in records)

    session = callback.session()
    fn = keras_row(session, "train", "cb")
    assert (fn.retraces, fn.objects) == (1, 2 * len(trainers))
    assert fn.keras_models() == ["cb"]
    assert session.total_retraces == 1
    loaded = tfretrace.load(saved)
    assert loaded.total_traces == session.total_traces
    assert keras_row(loaded, "train", "cb").main_cause == "keras-recompile"

    # A budget of zero: the first fit under this (fresh) callback is within budget, the fit after
    # compile() fails at the end of its first epoch, naming the cause.
    strict = RetraceCallback(max_retraces=0)
    model.compile("sgd", "mse")
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[strict])
    assert strict.epoch_retraces == [0]
    model.compile("sgd", "mse")
    with pytest.raises(tfretrace.RetraceError) as info:
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=[strict])
    assert info.value.cause == "keras-recompile"
    assert strict.epoch_retraces == [0, 1]
    assert not strict.monitor.active  # the callback stopped watching when it failed the fit


def test_retrace_callback_stops_its_monitor_when_the_budget_fails_the_fit() -> None:
    model = dense("leak")
    model.compile("sgd", "mse")
    strict = RetraceCallback(max_retraces=0)
    model.fit(X, Y, batch_size=8, verbose=0, callbacks=[strict])
    model.compile("sgd", "mse")
    try:
        with pytest.raises(tfretrace.RetraceError):
            model.fit(X, Y, batch_size=8, verbose=0, callbacks=[strict])

        @tf.function
        def unrelated(v: Any) -> Any:
            return v + 1

        unrelated(tf.ones(2))
        assert not strict.monitor.active
        assert all(f.name != "unrelated" for f in strict.session().functions)
    finally:
        strict.monitor.stop()


def test_evaluate_after_fit_and_validation_data_are_not_retraces() -> None:
    model = dense("val")
    model.compile("sgd", "mse")
    with watch() as mon:
        model.fit(X, Y, batch_size=8, verbose=0)
        model.evaluate(X, Y, batch_size=8, verbose=0)
    rows = [keras_row(mon.session(), "train", "val"), keras_row(mon.session(), "test", "val")]
    assert rows[0].traces + rows[1].traces == sum(tf_counts(model, "train").values()) + sum(
        tf_counts(model, "test").values()
    )
    for fn in rows:
        assert "keras-recompile" not in causes(fn), (fn.name, causes(fn))
        assert fn.retraces == 0

    # A plain fit with validation_data (nested evaluate hooks) does not exceed a zero budget.
    other = dense("val2")
    other.compile("sgd", "mse")
    callback = RetraceCallback(max_retraces=0)
    other.fit(X, Y, batch_size=8, epochs=2, validation_data=(X, Y), verbose=0, callbacks=[callback])
    assert callback.retraces() == []
    assert callback.epoch_retraces == [0, 0]


# -------------------------------------------------------------------------------------------------
# 9. MirroredStrategy over two logical CPUs (a subprocess: devices must be set before TF starts)

MIRRORED_SCRIPT = """
import json, os, sys
import numpy as np
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
keras = tf.keras
import tfretrace

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@tf.function
def inner(x):
    return x * 2.0


@tf.function
def outer(x):
    return strategy.run(lambda v: inner(v), args=(x,))


slots = []


@tf.function
def dist_step(v):
    if not slots:  # optimizer-style slots, made on the first step
        slots.append(tf.Variable(tf.zeros((3, 1))))
    slots[0].assign_add(tf.reduce_sum(v) * tf.ones((3, 1)))
    return tf.reduce_sum(slots[0])


def tf_counts(model, role):
    # Every tf.function reachable through model.<role>_function's closures (as tests/keras_roles.py).
    found, todo, seen = {}, [getattr(model, role + "_function")], set()
    while todo:
        value = todo.pop()
        if value is None or id(value) in seen:
            continue
        seen.add(id(value))
        if hasattr(value, "experimental_get_tracing_count"):
            if value.experimental_get_tracing_count():
                found[value.__name__] = value.experimental_get_tracing_count()
            todo.append(getattr(value, "python_function", None))
            continue
        todo.append(getattr(value, "__wrapped__", None))
        todo.extend(c.cell_contents for c in getattr(value, "__closure__", None) or ())
    return found


with tfretrace.watch(warn=False, log=False) as mon:
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((None, 3)), keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)],
            name="mirrored",
        )
        model.compile("sgd", "mse")
    model.fit(np.ones((16, 5, 3), "float32"), np.ones((16, 1), "float32"), batch_size=8, epochs=2, verbose=0)
    model.predict(np.ones((8, 5, 3), "float32"), batch_size=8, verbose=0)
    model.predict(np.ones((8, 7, 3), "float32"), batch_size=8, verbose=0)
    outer(tf.ones((4,)))
    outer(tf.ones((4,)))
    for _ in range(3):
        strategy.run(dist_step, args=(tf.ones((2, 3)),))

counts = {"train": tf_counts(model, "train"), "predict": tf_counts(model, "predict")}
counts["inner"] = inner.experimental_get_tracing_count()
counts["outer"] = outer.experimental_get_tracing_count()
print("RESULT " + json.dumps({"session": mon.session().to_dict(), "counts": counts}))
"""


def test_mirrored_strategy_replicas_and_keras(tmp_path: Path) -> None:
    script = tmp_path / "mirrored.py"
    script.write_text(textwrap.dedent(MIRRORED_SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    data = json.loads(line[len("RESULT ") :])
    session = tfretrace.Session.from_dict(data["session"])
    counts = data["counts"]

    inner = session.function("inner")
    assert causes(inner) == ["first-trace", "context-changed"]
    assert change_paths(inner, "context-changed") == {"<context>.device"}
    devices = {c.before for c in inner.events[1].changes} | {c.after for c in inner.events[1].changes}
    assert {d.rsplit("/", 1)[1] for d in devices} == {"device:CPU:0", "device:CPU:1"}
    assert inner.traces == counts["inner"] == 2
    assert session.function("outer").traces == counts["outer"] == 1

    # strategy.run(dist_step) traces a copy of dist_step; the slots it creates make TensorFlow
    # trace again without variable creation, from another object: variable-creation, expected.
    step = session.function("dist_step")
    assert causes(step) == ["first-trace", "variable-creation"]
    assert change_paths(step, "variable-creation") == {"<context>.scope_type"}
    assert step.retraces == 0 and all(e.expected for e in step.events)

    predict = keras_row(session, "predict", "mirrored")
    assert causes(predict) == ["first-trace", "shape-changed"]
    paths = change_paths(predict, "shape-changed")
    assert paths and all(p == INPUT or p.startswith((INPUT + ".", INPUT + "[")) for p in paths), paths
    assert predict.traces == counts["predict"][short_name(predict)] == 2

    fn = keras_row(session, "train", "mirrored")
    # train_step runs once per replica inside one trace: not double counted. (Keras 3.4 to 3.6
    # hand the step tf.function itself to strategy.run, which traces a per-replica clone the
    # model does not reach: TF's count of the model's functions is then a lower bound.)
    assert top_level(fn) == ["first-trace"]
    assert fn.traces - causes(fn).count("variable-creation") == 1 + sum(e.nested for e in fn.events)
    assert fn.traces >= sum(counts["train"].values())
    assert fn.retraces == 0
    assert fn.keras_models() == ["mirrored"]
    assert {e.keras.method for e in fn.events if e.keras} == {"fit"}


# -------------------------------------------------------------------------------------------------
# 10. two worker processes, merged

WORKER_SCRIPT = """
import argparse, dataclasses
import numpy as np
import tensorflow as tf
import tfretrace

keras = tf.keras

parser = argparse.ArgumentParser()
parser.add_argument("--worker", type=int, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

with tfretrace.watch(warn=False, log=False) as mon:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="shared")
    sizes = [8, 8] + ([5] if args.worker == 1 else [])
    for n in sizes:
        model.predict_on_batch(np.ones((n, 4), "float32"))
session = dataclasses.replace(mon.session(), label=f"worker{args.worker}")
session.save(args.out)
"""


def test_two_worker_sessions_merge_with_divergence_note(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER_SCRIPT))
    outs = [tmp_path / f"worker{i}.json" for i in (0, 1)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), "--worker", str(i), "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
            cwd=tmp_path,
        )
        for i, out in enumerate(outs)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]

    sessions = [tfretrace.load(p) for p in outs]
    assert [s.label for s in sessions] == ["worker0", "worker1"]
    rows = [keras_row(s, "predict", "shared") for s in sessions]
    assert [r.traces for r in rows] == [1, 2]
    assert rows[1].main_cause == "shape-changed"
    predict = rows[0].name

    merged = tfretrace.merge(sessions)
    assert merged.workers == ("worker0", "worker1")
    by_worker = {f.worker: f for f in merged.functions if f.name == predict}
    assert set(by_worker) == {"worker0", "worker1"}
    assert {f.worker for f in merged.functions} == {"worker0", "worker1"}
    assert (by_worker["worker0"].traces, by_worker["worker1"].traces) == (1, 2)
    assert by_worker["worker1"].keras_models() == ["shared"]
    diverging = [n for n in merged.notes if predict in n]
    assert len(diverging) == 1

    target = tmp_path / "merged.json"
    assert tfretrace.cli.main(["report", str(outs[0]), str(outs[1]), "-o", str(target)]) == 0
    reloaded = tfretrace.load(target)
    assert reloaded.workers == ("worker0", "worker1")
    assert [n for n in reloaded.notes if predict in n] == diverging
    assert sorted(f.worker for f in reloaded.functions if f.name == predict) == ["worker0", "worker1"]


# -------------------------------------------------------------------------------------------------
# 11. which Keras: the session says, and Keras 2's own function layout


def test_the_session_records_the_keras_that_tf_keras_is() -> None:
    model = dense("which")
    with watch() as mon:
        model.predict(X, verbose=0)
    session = mon.session()
    package = sys.modules[type(model).__module__.split(".")[0]]  # keras, or tf_keras
    assert (session.keras_package, session.keras) == (package.__name__, package.__version__)
    assert session.tensorflow == tf.__version__
    assert isinstance(RetraceCallback(), package.callbacks.Callback)


@pytest.mark.skipif(not KERAS2, reason="Keras 2 only: Keras 3 builds its step functions as closures")
def test_keras2_train_function_is_the_traced_function_on_an_iterator() -> None:
    """Keras 2 (TF 2.15's keras, tf_keras): model.train_function is itself the tf.function, traced
    on the dataset iterator, and its code is Keras' engine/training.py. A second model built at the
    same place and trained is that model's own first trace (docs/keras.md), not a new function
    object to fix inside Keras."""
    with watch() as mon:
        # Built under the monitor, so both are known to come from one place: one row.
        models = [dense("k2a"), dense("k2b")]
        for model in models:
            model.compile("sgd", "mse")
            model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    fn = keras_row(mon.session(), "train")
    assert fn.keras_models() == ["k2a", "k2b"]
    assert without_variable_creation(fn) == ["first-trace", "first-trace"]
    assert fn.retraces == 0 and all(e.expected for e in fn.events)
    assert fn.traces == sum(m.train_function.experimental_get_tracing_count() for m in models)
    assert fn.location.replace("\\", "/").split(":")[0].endswith("/src/engine/training.py")
    iterator = next(leaf for leaf in fn.events[0].signature if leaf.path == "iterator")
    assert iterator.kind == "spec" and "IteratorSpec" in (iterator.type_name or "")
    assert {(e.keras.epoch, e.keras.step) for e in fn.events if e.keras} == {(0, 0)}
