"""Prevention on real TensorFlow: record a run, run again with the profile, count with TF's own counter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.tf

# A scenario builds its tf.functions afresh (as a new process would), makes its calls, and
# returns (results, the tf.function objects to count, a callable making one call the profile
# never saw). Results are plain Python numbers so runs compare exactly.
Scenario = Callable[[], tuple[list[float], list[Any], Callable[[], float]]]


def _custom_loop() -> tuple[list[float], list[Any], Callable[[], float]]:
    import tensorflow as tf

    w = tf.Variable(tf.ones([4, 1]))

    @tf.function
    def train_step(x: Any) -> Any:
        loss = tf.reduce_mean(tf.matmul(x, w) ** 2)
        w.assign_sub(0.01 * tf.reduce_mean(x, axis=0, keepdims=True)[0][:, None])
        return loss

    data = tf.data.Dataset.from_tensor_slices(tf.reshape(tf.range(400, dtype=tf.float32), [100, 4]) / 400.0)
    results = [float(train_step(batch)) for epoch in range(2) for batch in data.batch(32)]
    return results, [train_step], lambda: float(train_step(tf.ones([3, 4])))


def _widening() -> tuple[list[float], list[Any], Callable[[], float]]:
    import tensorflow as tf

    @tf.function
    def encode(tokens: Any) -> Any:
        return tf.reduce_sum(tf.cast(tokens, tf.float32) * 0.5, axis=1)[0]

    results = [float(encode(tf.ones([8, n], tf.int32) * n)) for n in (5, 7, 9, 11, 7)]
    # A dtype the profile never saw: traces as it always would, and runs.
    return results, [encode], lambda: float(encode(tf.ones([8, 3], tf.int64)))


def _keras_predict() -> tuple[list[float], list[Any], Callable[[], float]]:
    import keras
    import numpy as np

    from keras_roles import is_keras2

    keras.utils.set_random_seed(0)
    inputs = keras.Input((None, 4))
    hidden = keras.layers.Dense(3)(inputs)
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(hidden))
    results = [
        float(model.predict(np.full((n, length, 4), 0.25, "float32"), batch_size=16, verbose=0).sum())
        for n, length in ((16, 5), (7, 5), (16, 9), (5, 3))
    ]

    def outside() -> float:
        # A list of two batches: a structure the profile never saw. Keras 2's predict_function
        # takes an iterator of batches instead: a length never seen, through predict.
        if is_keras2(keras):
            return float(np.asarray(model.predict(np.ones((2, 3, 4), "float32"), verbose=0)).sum())
        return float(np.asarray(model.predict_function([(np.ones((2, 3, 4), "float32"),)] * 2)).sum())

    return results, [model.predict_function], outside


def _keras_fit() -> tuple[list[float], list[Any], Callable[[], float]]:
    import keras
    import numpy as np

    from keras_roles import tf_functions

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    results: list[float] = []
    # 64 samples in batches of 32 give the adapter a static batch size; 70 then has a partial batch.
    for n in (64, 70):
        x, y = np.full((n, 4), 0.5, "float32"), np.ones((n, 2), "float32")
        results += model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False).history["loss"]
    # Keras 3 loops in multi_step_on_iterator; Keras 2 (and tf-keras) in train_function.
    found = tf_functions(model, "train")
    loop = found.get("multi_step_on_iterator") or found["train_function"]

    def outside() -> float:
        x, y = np.full((5, 4), 0.5, "float32"), np.ones((5, 2), "float32")
        return float(model.fit(x, y, batch_size=5, epochs=1, verbose=0).history["loss"][0])

    return [float(r) for r in results], [loop], outside


def _mirrored() -> tuple[list[float], list[Any], Callable[[], float]]:
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        w = tf.Variable(tf.fill([4], 0.5))

    def replica_step(x: Any) -> Any:
        w.assign_add(tf.reduce_mean(x, axis=0) * 0.01)
        return tf.reduce_sum(x * w)

    @tf.function
    def distributed_step(x: Any) -> Any:
        per_replica = strategy.run(replica_step, args=(x,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    results = [float(distributed_step(tf.ones([n, 4]) * n)) for n in (32, 32, 32, 6)]
    return results, [distributed_step], lambda: float(distributed_step(tf.ones([3, 4])))


def _mirrored_dataset() -> tuple[list[float], list[Any], Callable[[], float]]:
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])

    @tf.function
    def distributed_step(batch: Any) -> Any:
        per_replica = strategy.run(lambda x: tf.reduce_sum(x * 2.0), args=(batch,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    data = tf.data.Dataset.from_tensor_slices(tf.ones([10, 3])).batch(4)  # 4, 4, then 2
    results = [float(distributed_step(b)) for b in strategy.experimental_distribute_dataset(data)]
    return results, [distributed_step], lambda: float(distributed_step(tf.ones([3, 3])))


def _method() -> tuple[list[float], list[Any], Callable[[], float]]:
    import tensorflow as tf

    class Scorer(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale: Any = None

        @tf.function
        def score(self, x: Any) -> Any:
            if self.scale is None:  # variables created at the first call: one extra trace
                self.scale = tf.Variable(2.0)
            return tf.reduce_sum(x) * self.scale

    scorer = Scorer()
    results = [float(scorer.score(tf.ones([n, 3]))) for n in (10, 10, 4, 10, 1)]
    return results, [scorer.score], lambda: float(scorer.score(tf.ones([2])))


def _keras2() -> bool:
    import keras

    from keras_roles import is_keras2

    return is_keras2(keras)


SCENARIOS: dict[str, tuple[Scenario, int]] = {
    # name: (scenario, traces TensorFlow makes with prevention: 1, plus 1 for variable creation)
    "custom-loop-partial-batch": (_custom_loop, 1),
    "widening-sequence-lengths": (_widening, 1),
    "keras-predict": (_keras_predict, 1),
    "keras-fit-static-then-partial-batch": (_keras_fit, 1),
    "mirrored-strategy-step": (_mirrored, 1),
    "mirrored-distributed-dataset": (_mirrored_dataset, 1),
    "method-tf-function": (_method, 2),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_prevent_traces_once_with_the_same_results(name: str, tmp_path: Path) -> None:
    import tfretrace

    scenario, expected = SCENARIOS[name]
    if name == "keras-fit-static-then-partial-batch" and _keras2():
        # Keras 2 (TF 2.15, tf-keras): fit's train_function still retraces once for the partial
        # batch after the warm-up (3 -> 2); a known limit, listed in docs/prevent.md.
        expected = 2
    plain, plain_functions, plain_outside = scenario()
    plain_traces = sum(f.experimental_get_tracing_count() for f in plain_functions)
    assert plain_traces > expected, "the scenario must retrace without prevention"
    plain_outside_result = plain_outside()
    plain_all = sum(f.experimental_get_tracing_count() for f in plain_functions)

    with tfretrace.watch(warn=False) as monitor:
        scenario()
    profile = tmp_path / "profile.json"
    monitor.session().save(profile)

    with tfretrace.prevent(profile) as prevention:
        results, functions, outside = scenario()
        measured = sum(f.experimental_get_tracing_count() for f in functions)
        outside_result = outside()
        after_outside = sum(f.experimental_get_tracing_count() for f in functions)
    session = prevention.session()

    assert results == plain
    assert measured == expected
    assert after_outside >= measured  # the unforeseen call ran (traced as usual when not covered)
    assert outside_result == plain_outside_result
    assert session.prevention is not None
    (row,) = [f for f in session.prevention.functions if f.objects]
    # The replay of this run's calls without a warm-up gives what TensorFlow did without one.
    assert row.traces_without == plain_all
    assert row.traces_with == after_outside
    assert row.traces_after_warmup == after_outside - measured
    assert row.calls_outside >= (1 if after_outside > measured else 0)
    assert row.warmups >= 1 and row.warmup_seconds > 0


def test_the_saved_session_records_the_profile(tmp_path: Path) -> None:
    import tfretrace
    from tfretrace.records.session import load

    with tfretrace.watch(warn=False) as monitor:
        _widening()
    profile = tmp_path / "profile.json"
    monitor.session().save(profile)
    with tfretrace.prevent(profile) as prevention:
        _widening()
    saved = prevention.session().save(tmp_path / "run.json")
    again = load(saved)
    assert again.prevention is not None
    assert again.prevention.profile == str(profile)
    (row,) = again.prevention.functions
    assert (row.traces_without, row.traces_with) == (4, 1)
    assert again.total_retraces == 0  # what still retraces is what budgets and --fail-on-retrace count


def _python_values() -> list[Any]:
    import tensorflow as tf

    @tf.function
    def scaled(x: Any, lr: float) -> Any:
        return tf.reduce_sum(x) * lr

    return [float(scaled(tf.ones([3]), lr)) for lr in (0.1, 0.05, 0.025)]


def test_what_a_warm_up_cannot_prevent_points_at_the_fix_plan(tmp_path: Path) -> None:
    import tfretrace

    with tfretrace.watch(warn=False) as monitor:
        _python_values()
    profile = tmp_path / "profile.json"
    monitor.session().save(profile)
    with tfretrace.prevent(profile) as prevention:
        _python_values()
    report = prevention.report()
    (row,) = report.functions
    assert row.warmups == 0
    assert row.traces_without == row.traces_with == 3
    ((cause, retraces, fix),) = row.unpreventable
    assert (cause, retraces) == ("python-value-changed", 2)
    assert fix is not None  # the plan's own step for that cause


def test_a_profile_from_another_tensorflow_is_used_with_one_note(tmp_path: Path) -> None:
    import json

    import tfretrace

    with tfretrace.watch(warn=False) as monitor:
        _widening()
    profile = tmp_path / "profile.json"
    data = monitor.session().to_dict()
    data["tensorflow"] = "2.99.0"
    profile.write_text(json.dumps(data), encoding="utf-8")
    with tfretrace.prevent(profile) as prevention:
        _, functions, _ = _widening()
    assert functions[0].experimental_get_tracing_count() == 1
    report = prevention.session().prevention
    assert report is not None and report.profile_tensorflow == "2.99.0"
    assert len(report.notes) == 1


def test_ipython_magic_starts_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tfretrace
    from tfretrace.integrations import ipython as _ipython

    with tfretrace.watch(warn=False) as monitor:
        _widening()
    profile = tmp_path / "profile.json"
    monitor.session().save(profile)
    shell = type("Shell", (), {})()
    assert _ipython._prevent(shell, str(profile)) is None
    _, functions, _ = _widening()
    view = _ipython._prevent(shell, "off")
    assert view is not None
    (row,) = view.report.functions
    assert (row.traces_without, row.traces_with) == (4, 1)
    assert functions[0].experimental_get_tracing_count() == 1
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    assert _ipython._prevent(shell, str(tmp_path / "bad.json")) is None
    assert "tfretrace: error:" in capsys.readouterr().out


def _static_shapes() -> tuple[list[float], list[Any]]:
    import tensorflow as tf

    class Flattener(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight: Any = None

        @tf.function
        def flat(self, x: Any) -> Any:
            if self.weight is None:
                self.weight = tf.Variable(tf.fill([4], 0.5))
            # Python arithmetic on the static shape: a trace with a None dimension fails here.
            return tf.reduce_sum(tf.reshape(x * self.weight, [x.shape[0] * 4]))

    @tf.function
    def plain(x: Any) -> Any:
        return tf.reduce_sum(tf.reshape(x, [x.shape[0] * 4]))

    module = Flattener()
    results = [float(module.flat(tf.ones([n, 4]))) + float(plain(tf.ones([n, 4]))) for n in (8, 8, 3)]
    return results, [module.flat, plain]


def test_a_general_trace_that_would_fail_is_not_made(tmp_path: Path) -> None:
    import tfretrace

    plain, plain_functions = _static_shapes()
    with tfretrace.watch(warn=False) as monitor:
        _static_shapes()
    profile = tmp_path / "profile.json"
    monitor.session().save(profile)
    with tfretrace.prevent(profile) as prevention:
        results, functions = _static_shapes()
    assert results == plain
    assert [f.experimental_get_tracing_count() for f in functions] == [
        f.experimental_get_tracing_count() for f in plain_functions]
    report = prevention.report()
    # The body reads the open dimension as a number: the checks refuse the warm-up, and say so.
    assert all(row.not_warmed and not row.failures for row in report.functions)
    assert {row.traces_without for row in report.functions} == {row.traces_with for row in report.functions}


def test_jit_compile_functions_say_xla_still_compiles_per_shape(tmp_path: Path) -> None:
    import tensorflow as tf

    import tfretrace

    def run() -> Any:
        @tf.function(jit_compile=True)
        def dense(x: Any) -> Any:
            return tf.reduce_sum(x * 3.0)

        for n in (4, 4, 6):
            dense(tf.ones([n]))
        return dense

    with tfretrace.watch(warn=False) as monitor:
        run()
    profile = tmp_path / "profile.json"
    monitor.session().save(profile)
    with tfretrace.prevent(profile) as prevention:
        dense = run()
    assert dense.experimental_get_tracing_count() == 1
    (row,) = prevention.report().functions
    assert row.jit_compile and row.to_dict()["jit_compile"] is True
