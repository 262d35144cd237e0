"""The structural oracle (tfretrace._tf.graph_compare) on real TensorFlow graphs holding string constants."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


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
