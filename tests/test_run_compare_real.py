"""TensorFlow runs both versions where the graphs part; the probe creates no variable; seeds read from TensorFlow.

Issue 38 items 1-3 at the probe's level, on real TensorFlow and real traces: a recorded trace and
the trace with a Python value as a tensor are run on the same inputs (their results compared,
the variables restored after), never a body with an effect outside its outputs; a trace that
would create a variable on the live object is stopped before it does; a stateful random draw's
seed is read from the traces and the global seed.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

from tfretrace._tf.probe import probe_argument, probe_signature, unseeded_draws  # noqa: E402
from tfretrace._tf.run_compare import compare_runs, effect  # noqa: E402

X = tf.reshape(tf.range(12, dtype=tf.float32), (4, 3))


def _called(function: Any, *calls: tuple[Any, ...]) -> Any:
    for args in calls:
        function(*args)
    return function


def test_an_int_index_parts_the_graphs_and_runs_to_the_same_results() -> None:
    @tf.function
    def pick(x, i):
        return x[i] * 2.0

    dtype, refused, depends, compared = probe_argument(_called(pick, (X, 0), (X, 2), (X, 3)), "i", ("int32",))
    assert (dtype, refused, depends) == ("int32", None, None)
    assert compared == 3 * 8


def test_results_that_differ_on_the_same_inputs_keep_the_dependence() -> None:
    # The Python value's type picks the computation: a float folds x * lr, a tensor doubles it.
    @tf.function
    def step(x, lr):
        if isinstance(lr, float):
            return x * lr
        return x * lr * 2.0

    dtype, refused, depends, compared = probe_argument(_called(step, (X, 0.1), (X, 0.2)), "lr", ("float32",))
    assert (dtype, refused, compared) == ("float32", None, 0)
    assert depends is not None and "trace #1" in depends


def test_a_body_with_an_effect_is_not_run() -> None:
    @tf.function
    def step(x, lr):
        tf.print("lr", lr)
        return x * (lr * 0.5)

    found = _called(step, (X, 0.1), (X, 0.2))
    assert effect(found._list_all_concrete_functions()[0].graph) == "PrintV2"
    dtype, _refused, depends, compared = probe_argument(found, "lr", ("float32",))
    assert dtype == "float32" and depends is not None and compared == 0


def test_reading_a_variable_s_shape_is_no_effect() -> None:
    # Keras optimizers read their variables' shapes (VariableShape): a read, which the comparison may run.
    weights = tf.Variable(tf.ones([3]))

    @tf.function
    def scaled(x, lr):
        size = tf.raw_ops.VariableShape(input=weights.handle)[0]  # what an optimizer's update reads
        return x * tf.cast(size, tf.float32) * (lr * 0.5)

    found = _called(scaled, (X, 0.1), (X, 0.2))
    ops = {op.type for op in found._list_all_concrete_functions()[0].graph.get_operations()}
    assert "VariableShape" in ops
    assert effect(found._list_all_concrete_functions()[0].graph) is None


def test_variables_are_restored_after_each_run_and_compared_as_results() -> None:
    total = tf.Variable(tf.zeros([3]))

    @tf.function
    def accumulate(x, lr):
        total.assign_add(tf.reduce_sum(x, axis=0) * (lr * 0.5))
        return tf.reduce_sum(x)

    found = _called(accumulate, (X, 0.1), (X, 0.2))
    before = total.numpy().copy()
    dtype, _refused, depends, compared = probe_argument(found, "lr", ("float32",))
    assert (dtype, depends, compared) == ("float32", None, 16)
    assert total.numpy().tobytes() == before.tobytes()

    # Outputs equal, the variable's update not: the update is a result too.
    @tf.function
    def hidden(x, lr):
        if isinstance(lr, float):
            total.assign_add(tf.reduce_sum(x, axis=0) * lr)
        else:
            total.assign_sub(tf.reduce_sum(x, axis=0) * lr)
        return tf.reduce_sum(x)

    found = _called(hidden, (X, 0.1), (X, 0.2))
    kept = total.numpy().copy()
    trace = found._list_all_concrete_functions()[0]
    general = tf.function(hidden.python_function).get_concrete_function(
        tf.TensorSpec([4, 3], tf.float32), tf.TensorSpec([], tf.float32)
    )
    compared, differs = compare_runs(trace, general, 1, tf.constant(0.1))
    assert compared == 0 and differs is not None
    assert total.numpy().tobytes() == kept.tobytes()


def test_a_trace_that_would_create_a_variable_is_stopped_before_it_does() -> None:
    # The variable is made the first time the body sees a batch of unknown size: never in the run
    # (every call had a size), so the general signature's trace would make one on the live object.
    made: dict[str, Any] = {}

    @tf.function
    def step(x):
        key = "open" if x.shape[0] is None else "sized"
        if key not in made:
            made[key] = tf.Variable(tf.ones([3]))
        return x * made[key]

    _called(step, (X,), (X[:2],))
    assert sorted(made) == ["sized"]
    said = probe_signature(step, "[tf.TensorSpec(shape=[None, 3], dtype=tf.float32)]", "tf")
    assert said is not None and "variable" in said
    assert sorted(made) == ["sized"]  # nothing was created on the live object

    # A body whose variables exist by now (a model built at the first call) is asked as usual.
    dense = tf.keras.layers.Dense(2) if hasattr(tf, "keras") else None
    assert dense is not None

    @tf.function
    def built(x):
        return dense(x)

    _called(built, (X,), (X[:2],))
    assert probe_signature(built, "[tf.TensorSpec(shape=[None, 3], dtype=tf.float32)]", "tf") is None


def test_the_seed_of_a_random_draw_is_read_from_tensorflow() -> None:
    @tf.function
    def unseeded(x):
        return x + tf.random.normal(tf.shape(x))

    @tf.function
    def op_seeded(x):
        return x + tf.random.normal(tf.shape(x), seed=3)

    @tf.function
    def stateless(x):
        return x + tf.random.stateless_normal(tf.shape(x), seed=[1, 2])

    # An earlier test of this process may have fixed a global seed, or turned op determinism on
    # (then a random op without a seed refuses to run): the traces below see neither, and both are
    # as they were afterwards, for the tests after this one.
    from tensorflow.python.eager import context
    from tensorflow.python.framework import config as tf_config

    seed, determinism = context.global_seed(), tf_config.is_op_determinism_enabled()
    tf.random.set_seed(None)
    tf_config.disable_op_determinism()
    try:
        for function in (unseeded, op_seeded, stateless):
            function(X)
        assert unseeded_draws(unseeded) == "RandomStandardNormal"
        assert unseeded_draws(op_seeded) is None
        assert unseeded_draws(stateless) is None  # no stateful draw at all
        tf.random.set_seed(5)
        assert unseeded_draws(unseeded) is None  # a global seed set: the run can repeat its streams
        tf.random.set_seed(None)
        assert unseeded_draws(unseeded) == "RandomStandardNormal"
    finally:
        tf.random.set_seed(seed)
        if determinism:
            tf_config.enable_op_determinism()
