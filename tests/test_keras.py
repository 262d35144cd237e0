"""Real Keras 3 (TensorFlow backend): each Keras cause with its model and method, RetraceCallback in a
real fit, MirroredStrategy over two logical CPUs, and merging the sessions of two worker processes."""

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
keras = pytest.importorskip("keras")

import tfretrace  # noqa: E402
import tfretrace.cli  # noqa: E402
from tfretrace.events import FunctionReport  # noqa: E402
from tfretrace.keras import RetraceCallback  # noqa: E402

pytestmark = pytest.mark.tf

PREDICT = "TensorFlowTrainer.make_predict_function.<locals>.one_step_on_data_distributed"
ONE_STEP = "TensorFlowTrainer._make_function.<locals>.one_step_on_data"
MULTI_STEP = "TensorFlowTrainer._make_function.<locals>.multi_step_on_iterator"
TRAINER_FUNCTIONS = (ONE_STEP, MULTI_STEP)

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


def trainer_tf_functions(model: Any) -> dict[str, Any]:
    """The tf.functions behind model.train_function/test_function (a plain Python closure)."""
    found: dict[str, Any] = {}
    for cell in model.train_function.__closure__ or ():
        value = cell.cell_contents
        for candidate in (value, getattr(value, "__wrapped__", None)):
            if hasattr(candidate, "experimental_get_tracing_count"):
                found[candidate.__name__] = candidate
    return found


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
    fn = mon.session().function(PREDICT)
    assert causes(fn) == ["first-trace", "shape-changed"]
    assert fn.keras_models() == ["encoder"]
    assert fn.display_name() == "encoder.predict"
    assert all(e.keras is not None and (e.keras.model, e.keras.method) == ("encoder", "predict") for e in fn.events)
    change = fn.events[1].changes[0]
    assert (change.path, change.kind, change.before, change.after) == ("data[0]", "shape", "(32, 4)", "(16, 4)")
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
    fn = mon.session().function(PREDICT)
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


# -------------------------------------------------------------------------------------------------
# 3. compile() again between fits


def test_compile_again_is_keras_recompile_for_the_trainer_functions() -> None:
    model = dense("clf")
    model.compile("sgd", "mse")
    with watch() as mon:
        model.fit(X, Y, batch_size=8, verbose=0)
        first = trainer_tf_functions(model)
        model.compile("sgd", "mse")
        model.fit(X, Y, batch_size=8, verbose=0)
        second = trainer_tf_functions(model)
    session = mon.session()
    for name in TRAINER_FUNCTIONS:
        fn = session.function(name)
        assert causes(fn) == ["first-trace", "keras-recompile"], name
        assert fn.keras_models() == ["clf"]
        assert fn.objects == 2
        assert {e.keras.method for e in fn.events if e.keras} == {"fit"}
        short = name.rsplit(".", 1)[1]
        assert fn.traces == (
            first[short].experimental_get_tracing_count() + second[short].experimental_get_tracing_count()
        )
        # compile() dropped the old function: the retrace is on the second object
        assert fn.events[1].object_index == 2


# -------------------------------------------------------------------------------------------------
# 4. load_model per call


def test_load_model_per_call_is_keras_load_model(tmp_path: Path) -> None:
    path = tmp_path / "tiny.keras"
    dense("saved").save(path)
    with watch() as mon:
        for _ in range(2):
            model = keras.models.load_model(path)
            model.predict(np.ones((8, 4), "float32"), verbose=0)
    fn = mon.session().function(PREDICT)
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
    fn = mon.session().function(ONE_STEP)
    assert causes(fn) == ["first-trace", "shape-changed", "dtype-changed"]
    assert {e.keras.method for e in fn.events if e.keras} == {"train_on_batch"}
    assert fn.keras_models() == ["tob"]
    assert change_paths(fn, "shape-changed") == {"data[0]", "data[1]"}
    dtype = fn.events[2].changes
    assert [(c.path, c.kind, c.before, c.after) for c in dtype] == [("data[0]", "dtype", "float32", "float64")]
    assert fn.traces == trainer_tf_functions(model)["one_step_on_data"].experimental_get_tracing_count() == 3


# -------------------------------------------------------------------------------------------------
# 6. a plain fit: variable creation is expected, built_at and epoch are recorded


def test_plain_fit_has_variable_creation_and_no_retraces() -> None:
    with watch() as mon:
        built_line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="plain")
        model.compile("adam", "mse")
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    session = mon.session()
    one_step = session.function(ONE_STEP)
    assert causes(one_step) == ["first-trace", "variable-creation"]
    assert change_paths(one_step, "variable-creation") == {"<context>.scope_type"}
    counts = {k: f.experimental_get_tracing_count() for k, f in trainer_tf_functions(model).items()}
    for name in TRAINER_FUNCTIONS:
        fn = session.function(name)
        assert fn.retraces == 0, name
        assert fn.main_cause is None
        assert fn.traces == counts[name.rsplit(".", 1)[1]]
        for event in fn.events:
            assert event.keras is not None
            assert (event.keras.model, event.keras.method, event.keras.epoch) == ("plain", "fit", 0)
            assert event.keras.built_at is not None
            assert event.keras.built_at.endswith(f"test_keras.py:{built_line}")
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
    # the second fit's first epoch retraced both trainer functions, the second epoch nothing
    assert callback.epoch_retraces == [0, 0, 2, 0]
    assert sorted((name, e.cause) for name, e in callback.retraces()) == [
        (MULTI_STEP, "keras-recompile"),
        (ONE_STEP, "keras-recompile"),
    ]
    records = [r for r in caplog.records if r.name == "tfretrace"]
    assert len(records) == 2
    assert all(r.levelno == logging.WARNING for r in records)

    session = callback.session()
    for name in TRAINER_FUNCTIONS:
        fn = session.function(name)
        assert (fn.traces, fn.retraces, fn.objects) == (2, 1, 2), name
        assert fn.keras_models() == ["cb"]
    assert session.total_retraces == 2
    loaded = tfretrace.load(saved)
    assert loaded.total_traces == session.total_traces
    assert loaded.function(ONE_STEP).main_cause == "keras-recompile"

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
    assert strict.epoch_retraces == [0, 2]
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
    for name in TRAINER_FUNCTIONS:
        fn = mon.session().function(name)
        assert "keras-recompile" not in causes(fn), (name, causes(fn))
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
import keras
import tfretrace

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@tf.function
def inner(x):
    return x * 2.0


@tf.function
def outer(x):
    return strategy.run(lambda v: inner(v), args=(x,))


def trainer_functions(model):
    found = {}
    for cell in model.train_function.__closure__ or ():
        for f in (cell.cell_contents, getattr(cell.cell_contents, "__wrapped__", None)):
            if hasattr(f, "experimental_get_tracing_count"):
                found[f.__name__] = f.experimental_get_tracing_count()
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

counts = dict(trainer_functions(model))
counts["predict"] = model.predict_function.experimental_get_tracing_count()
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

    predict = session.function(PREDICT)
    assert causes(predict) == ["first-trace", "shape-changed"]
    paths = change_paths(predict, "shape-changed")
    assert paths and all(p == "data[0]" or p.startswith("data[0].") for p in paths)
    assert predict.traces == counts["predict"] == 2
    assert predict.keras_models() == ["mirrored"]

    for name in TRAINER_FUNCTIONS:
        fn = session.function(name)
        # train_step runs once per replica inside one trace: not double counted
        assert fn.traces == counts[name.rsplit(".", 1)[1]] == 1, name
        assert fn.retraces == 0
        assert fn.keras_models() == ["mirrored"]
        assert {e.keras.method for e in fn.events if e.keras} == {"fit"}


# -------------------------------------------------------------------------------------------------
# 10. two worker processes, merged

WORKER_SCRIPT = """
import argparse, dataclasses
import numpy as np
import keras
import tfretrace

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
    assert [s.function(PREDICT).traces for s in sessions] == [1, 2]
    assert sessions[1].function(PREDICT).main_cause == "shape-changed"

    merged = tfretrace.merge(sessions)
    assert merged.workers == ("worker0", "worker1")
    by_worker = {f.worker: f for f in merged.functions if f.name == PREDICT}
    assert set(by_worker) == {"worker0", "worker1"}
    assert {f.worker for f in merged.functions} == {"worker0", "worker1"}
    assert (by_worker["worker0"].traces, by_worker["worker1"].traces) == (1, 2)
    assert by_worker["worker1"].keras_models() == ["shared"]
    diverging = [n for n in merged.notes if PREDICT in n]
    assert len(diverging) == 1
    assert not any(ONE_STEP in n or MULTI_STEP in n for n in merged.notes)

    target = tmp_path / "merged.json"
    assert tfretrace.cli.main(["report", str(outs[0]), str(outs[1]), "-o", str(target)]) == 0
    reloaded = tfretrace.load(target)
    assert reloaded.workers == ("worker0", "worker1")
    assert [n for n in reloaded.notes if PREDICT in n] == diverging
    assert sorted(f.worker for f in reloaded.functions if f.name == PREDICT) == ["worker0", "worker1"]
