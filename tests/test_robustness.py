"""tfretrace never changes the user's program: errors contained, results identical, no leaks, bounded."""

from __future__ import annotations

import gc
import itertools
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfretrace._tf.reading import RawTrace
from tfretrace.explain import analyzer
from tfretrace.records.events import Leaf
from tfretrace.runtime import intake as _intake
from tfretrace.runtime import monitor


def _raw(n: int) -> RawTrace:
    return RawTrace(
        key=("synthetic.py", 1, "storm"),
        name="storm",
        location="synthetic.py:1",
        token=1,
        signature=(
            Leaf("x", "tensor", dtype="float32", shape=(n,)),
            Leaf("step", "python", value=str(n), type_name="int"),
        ),
        traced_as=None,
        context=(("scope_type", "VARIABLE_CREATION"),),
        call_site="synthetic.py:9",
        thread="MainThread",
        keras=None,
        raw_key=lambda: "",
        counter=itertools.count(n + 1),
        nested=False,
    )


def test_history_is_bounded_over_100000_retraces() -> None:
    """Drives the monitor directly (no TF): 100,000 traces of one function keep bounded memory."""
    mon = monitor.Monitor(warn=False, log=False, max_events=200)
    for n in range(100_000):
        raw = _raw(n)
        pending = mon.before_trace(raw)
        assert pending is not None
        mon.after_trace(raw, pending, 0.001, True)
        if n == 20_000:
            gc.collect()
            at_20k = len(gc.get_objects())
    gc.collect()
    at_100k = len(gc.get_objects())
    state = mon.state("storm")
    assert state.traces == 100_000
    assert len(state.events()) == 200
    assert state.dropped == 100_000 - 200
    assert len(state.priors) == monitor.COMPARE_WINDOW
    assert [e.index for e in state.events()][:3] == [1, 2, 3]  # the head is kept
    assert state.events()[-1].index == 100_000
    # The live objects after 100k traces are as many as after 20k: nothing grows per trace.
    assert at_100k - at_20k < 1000
    assert mon.internal_errors == 0


def test_internal_error_is_counted_and_the_call_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    tf = pytest.importorskip("tensorflow")

    def broken(*args: object, **kwargs: object) -> analyzer.Explanation:
        raise RuntimeError("simulated tfretrace bug")

    @tf.function
    def user_fn(x: tf.Tensor) -> tf.Tensor:
        return x * 3.0

    monkeypatch.setattr(_intake, "explain", broken)
    with monitor.watch(warn=False, log=False) as mon:
        first = user_fn(tf.constant([1.0, 2.0]))
        second = user_fn(tf.constant([1.0, 2.0, 3.0]))
    session = mon.session()
    assert session.internal_errors == 2
    assert "simulated tfretrace bug" in session.internal_error_messages[0]
    np.testing.assert_array_equal(first.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(second.numpy(), [3.0, 6.0, 9.0])
    assert user_fn.experimental_get_tracing_count() == 2


def test_an_error_inside_the_analysis_is_counted_in_its_session(monkeypatch: pytest.MonkeyPatch) -> None:
    # The planner runs after the record is taken: its error was counted by the monitor and missing
    # from the session (and its report), which showed a function with no plan and no word why.
    tf = pytest.importorskip("tensorflow")
    from tfretrace.fix.planning import plan

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("simulated planner bug")

    @tf.function
    def user_fn(x: tf.Tensor) -> tf.Tensor:
        return x * 3.0

    with monitor.watch(warn=False, log=False) as mon:
        for n in (2, 3, 4):
            user_fn(tf.ones([n]))
    monkeypatch.setattr(plan, "link_restored", broken)  # run by the analysis alone, after the record
    session = mon.analyzed(probe=False)
    assert session.internal_errors == 1
    assert "simulated planner bug" in session.internal_error_messages[0]
    assert session.functions[0].plan  # the plans made before the error are kept
    assert user_fn.experimental_get_tracing_count() == 3


def test_user_exceptions_propagate_unchanged() -> None:
    tf = pytest.importorskip("tensorflow")

    class UserError(Exception):
        pass

    @tf.function
    def raising(x: tf.Tensor) -> tf.Tensor:
        raise UserError("from the user")

    with monitor.watch(warn=False, log=False), pytest.raises(UserError, match="from the user"):
        raising(tf.ones([1]))


def _train_weights(monitored: bool) -> list[np.ndarray]:
    import keras
    import tensorflow as tf
    from tensorflow.python.framework import config as tf_config

    keras.utils.set_random_seed(7)
    # Op determinism is process-wide: turned off again after, or every later test of this worker
    # that draws without a seed fails (a Keras callback test did, in the fresh-clone suite).
    was = tf_config.is_op_determinism_enabled()
    tf.config.experimental.enable_op_determinism()
    try:
        return _fitted(keras, monitored)
    finally:
        if not was:
            tf_config.disable_op_determinism()


def _fitted(keras: Any, monitored: bool) -> list[np.ndarray]:
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(70, 6)).astype("float32")
    y = rng.normal(size=(70, 1)).astype("float32")
    if monitored:
        with monitor.watch(warn=False, log=False) as mon:
            model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
            model.predict(x[:5], verbose=0)
        assert mon.session().total_traces > 0
    else:
        model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        model.predict(x[:5], verbose=0)
    return [w.copy() for w in model.get_weights()]


@pytest.mark.tf
def test_weights_after_fit_are_bit_identical_with_and_without_monitor() -> None:
    pytest.importorskip("keras")
    bare = _train_weights(monitored=False)
    watched = _train_weights(monitored=True)
    assert len(bare) == len(watched)
    for a, b in zip(bare, watched):
        assert a.tobytes() == b.tobytes()


@pytest.mark.tf
def test_monitor_keeps_no_strong_reference_to_models_or_arguments() -> None:
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")

    class Config:
        scale = 2.0

    @tf.function
    def uses_obj(x: tf.Tensor, cfg: Config) -> tf.Tensor:
        return x * cfg.scale

    with monitor.watch(warn=False, log=False) as mon:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.predict(np.ones((2, 3), "float32"), verbose=0)
        cfg = Config()
        uses_obj(tf.ones([1]), cfg)
        model_ref, cfg_ref = weakref.ref(model), weakref.ref(cfg)
        del model, cfg
        gc.collect()
        assert model_ref() is None, "the monitor kept the model alive"
        assert cfg_ref() is None, "the monitor kept the argument alive"
    assert mon.session().total_traces >= 2


@pytest.mark.tf
def test_concurrent_calls_from_threads_are_recorded() -> None:
    tf = pytest.importorskip("tensorflow")

    @tf.function
    def threaded(x: tf.Tensor) -> tf.Tensor:
        return x + 1

    errors: list[BaseException] = []

    def worker(width: int) -> None:
        try:
            for _ in range(25):
                threaded(tf.ones([width]))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    with monitor.watch(warn=False, log=False) as mon:
        threads = [threading.Thread(target=worker, args=(w,)) for w in (1, 2, 3, 4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    fn = mon.session().function("threaded")
    assert fn.traces == threaded.experimental_get_tracing_count() == 4
    assert fn.calls == 100
    assert {e.thread for e in fn.events} <= {t.name for t in threads}
    assert mon.internal_errors == 0


@pytest.mark.parametrize(("code", "flags", "expected"), [(3, [], 3), (0, ["--fail-on-retrace"], 2)])
def test_an_error_in_tfretrace_after_the_program_keeps_its_output_and_never_passes_a_gate(
    code: int, flags: list[str], expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The analysis at the end raising (here forced from a sitecustomize) made `tfretrace run` exit 1
    # with a traceback. Now the program's output is whole, its failure status wins, and a program that
    # succeeded gets 2, as when the report cannot be written: a gate asked for never passes unchecked.
    pytest.importorskip("tensorflow")
    from prog_runs import run_in

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from tfretrace.runtime import analysis\n\n"
        "def broken(*args, **kwargs):\n"
        "    raise RuntimeError('simulated analysis bug')\n\n"
        "analysis.Analysis.analyze = broken\n"
    )
    (tmp_path / "prog.py").write_text(
        "import sys\nimport tensorflow as tf\n\n"
        "f = tf.function(lambda x: x * 2)\n"
        "for n in (2, 3):\n    print(f(tf.ones([n])).numpy().tolist())\n"
        f"sys.exit({code})\n"
    )
    plain = run_in(tmp_path, "prog.py")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    done = run_in(tmp_path, "-m", "tfretrace", "run", *flags, "prog.py")
    printed = "[2.0, 2.0]\n[2.0, 2.0, 2.0]\n"
    assert (plain.returncode, plain.stdout) == (code, printed)
    assert (done.returncode, done.stdout) == (expected, printed)
    assert "Traceback" not in done.stderr
    assert sum("simulated analysis bug" in line for line in done.stderr.splitlines()) == 1
