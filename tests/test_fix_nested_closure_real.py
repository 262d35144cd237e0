"""Issue 38: a tf.function nested in a function that returned, closing over its values, asked of TensorFlow.

``train_step`` and ``valid_step`` are defined inside ``train_model()``, over two variables and an SGD
with momentum whose slots the first call creates; each epoch batches by another size, so both retrace.
By the end of the run ``train_model()`` has returned and no name reaches either object. A run that will
be asked (``run --save``) keeps each one alive once it retraces, so TensorFlow traces the general
signature on the very closure and runs it beside every recorded trace. Counts are TensorFlow's own
(``experimental_get_tracing_count()``); the fix is applied to a copy and run on another data size too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prog_runs import Ran, applied_copy, edited_steps, ran_program, recorded

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import numpy as np
import tensorflow as tf

rows = int(sys.argv[1]) if sys.argv[1:] else 70
rng = np.random.default_rng(rows)
x = rng.normal(size=(rows, 4)).astype("float32")
y = rng.normal(size=(rows, 1)).astype("float32")
traced = {}


def main():
    w = tf.Variable(tf.fill([4, 1], 0.1))
    b = tf.Variable(tf.zeros([1]))
    opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)

    def train_model(epochs):
        @tf.function
        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.matmul(xb, w) + b - yb) ** 2)
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            return loss

        @tf.function
        def valid_step(xb, yb):
            return tf.reduce_mean((tf.matmul(xb, w) + b - yb) ** 2)

        for epoch in range(epochs):
            size = 16 + 4 * epoch
            for start in range(0, rows, size):
                xb, yb = tf.constant(x[start:start + size]), tf.constant(y[start:start + size])
                loss = train_step(xb, yb)
                error = valid_step(xb, yb)
            print(epoch, float(loss).hex(), float(error).hex())
        traced["train_step"] = train_step.experimental_get_tracing_count()
        traced["valid_step"] = valid_step.experimental_get_tracing_count()

    train_model(3)


main()
for name, count in traced.items():
    print("traces", name, count)
"""


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ran, dict[str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("closure") / "recorded"
    before, functions = recorded(folder, PROGRAM)
    return folder, before, {name.rpartition(".")[2]: f for name, f in functions.items()}


def test_both_closures_are_asked_and_safe(nested: tuple[Path, Ran, dict[str, dict[str, Any]]]) -> None:
    _folder, before, functions = nested
    assert before.traces == {"train_step": 7, "valid_step": 6}
    for name in ("train_step", "valid_step"):
        steps = [(s["kind"], s["safety"], s.get("checked")) for s in edited_steps(functions[name])]
        assert steps == [("input-signature", "safe", "tensorflow")], name
    # train_step's first call created the momentum slots: its general trace creates none now.
    assert functions["train_step"]["fix_counts"]["apply"] == 2
    assert functions["valid_step"]["fix_counts"]["apply"] == 1


def test_apply_lowers_tensorflows_counts_and_keeps_the_output_on_other_data(
    nested: tuple[Path, Ran, dict[str, dict[str, Any]]],
) -> None:
    folder, before, _functions = nested
    copy = applied_copy(folder)
    after = ran_program(copy)
    assert after.traces == {"train_step": 2, "valid_step": 1}
    assert after.results == before.results
    other_before, other_after = ran_program(folder, "prog.py", "50"), ran_program(copy, "prog.py", "50")
    assert other_after.results == other_before.results
    assert sum(other_after.traces.values()) < sum(other_before.traces.values())
