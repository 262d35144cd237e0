"""TensorFlow's graphs say whether a Python value is only data: each trace against the trace with a tensor there.

``probe_argument`` replays every trace of a function with one Python argument a tensor; its third
answer is where the two differ (None: the value entered each recorded graph only as constants the
tensor's graph reads as its placeholder, or, where the graphs part, TensorFlow ran both on the same
inputs to the same results: the fourth answer counts those inputs). Real TensorFlow, real traces.
The structural comparison itself (``graph_compare.value_only_as_data``) is also asked of graphs holding
string constants, which NumPy keeps as Python objects.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

from tfretrace._tf.probe import probe_argument  # noqa: E402  (after TensorFlow is known to be there)

X = tf.constant([1.0, 2.0])
PRED = tf.constant(True)


def _called(function: Any, *calls: tuple[Any, ...]) -> Any:
    for args in calls:
        function(*args)
    return function


def test_a_rate_used_only_as_data_is_data() -> None:
    @tf.function
    def step(x, lr):
        return tf.reduce_sum(x * lr)

    found = _called(step, (X, 0.1), (X, 0.2), (X, 0.3))
    assert probe_argument(found, "lr", ("float32", "float64")) == ("float32", None, None, 0)  # nothing run


def test_a_constant_equal_to_the_value_elsewhere_is_not_taken_for_it() -> None:
    # lr = 2.0 and a literal 2.0 in the body: the recorded graph has two equal constants, the
    # tensor's graph one constant and the placeholder; matched in order, they are the same graph.
    @tf.function
    def step(x, lr):
        return x * 2.0 * lr

    found = _called(step, (X, 2.0), (X, 3.0))
    assert probe_argument(found, "lr", ("float32",))[2] is None


def test_python_arithmetic_on_the_value_parts_the_graphs_and_tensorflow_runs_both_to_the_same_results() -> None:
    # lr * 0.5 is computed in Python and folded as one constant; as a tensor it is an operation more.
    # The graphs part, so TensorFlow runs both on the same inputs: the same results (issue 38).
    @tf.function
    def step(x, lr):
        return x * (lr * 0.5)

    dtype, refused, depends, compared = probe_argument(_called(step, (X, 0.1), (X, 0.2)), "lr", ("float32",))
    assert (dtype, refused, depends) == ("float32", None, None)
    assert compared == 2 * 8  # two traces, 3 random draws and 5 edge values each


def test_a_python_test_of_the_value_that_picks_another_branch_body_is_seen() -> None:
    # Both branches build one tf.cond with the same inputs: only the branch functions differ.
    @tf.function
    def step(x, p, lr):
        if isinstance(lr, float):
            return tf.cond(p, lambda: x * 2.0, lambda: x) * lr
        return tf.cond(p, lambda: x * 3.0, lambda: x) * lr

    depends = probe_argument(_called(step, (X, PRED, 0.1), (X, PRED, 0.2)), "lr", ("float32",))[2]
    assert depends is not None

    @tf.function
    def same(x, p, lr):
        return tf.cond(p, lambda: x * 2.0, lambda: x) * lr

    assert probe_argument(_called(same, (X, PRED, 0.1), (X, PRED, 0.2)), "lr", ("float32",))[2] is None


def test_a_flag_in_a_python_if_parts_the_graphs_and_runs_to_the_same_results() -> None:
    # Autograph makes the `if` a tf.cond on the tensor: another graph, the same results for each flag.
    @tf.function
    def step(x, flag):
        y = x
        if flag:
            y = y + 1.0
        return tf.reduce_sum(y)

    dtype, refused, depends, compared = probe_argument(_called(step, (X, True), (X, False)), "flag", ("bool",))
    assert refused is None and dtype == "bool"
    assert depends is None and compared == 16


def _graphs(body: Any) -> tuple[Any, Any]:
    """The body traced with ``n`` the Python int 3, and with ``n`` an int32 tensor (a Python int's dtype)."""
    function = tf.function(body)
    recorded = function.get_concrete_function(tf.constant(["a"]), 3).graph
    tensor = function.get_concrete_function(tf.constant(["a"]), tf.TensorSpec([], tf.int32)).graph
    return recorded, tensor


def test_a_string_constant_is_compared_by_its_text_not_by_where_python_keeps_it() -> None:
    from tfretrace._tf.graph_compare import value_only_as_data

    # A string constant beside the value (a summary tag, a separator): the same text in both traces. Its
    # NumPy array holds Python objects, whose bytes are addresses that differ between any two graphs.
    def tagged(words: Any, n: Any) -> Any:
        return tf.strings.join([words, tf.constant(" : separator")]), tf.cast(n, tf.float32) * 2.0

    assert value_only_as_data(*_graphs(tagged), "n", 3) is None


def test_a_string_made_from_the_value_in_python_still_parts_the_graphs() -> None:
    from tfretrace._tf.graph_compare import value_only_as_data

    def labelled(words: Any, n: Any) -> Any:
        return tf.strings.join([words, tf.constant(f"step {n}")])  # noqa: TFR001 (the Python value, on purpose)

    assert value_only_as_data(*_graphs(labelled), "n", 3) is not None
