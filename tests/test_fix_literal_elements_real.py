"""A Python number one element deep in a tuple or dict the call site writes out: an edit TensorFlow runs both ways.

``overlay((images, label))`` with a class index per call, ``sgd(x, {"lr": lr, "name": "plain"})`` with a
learning rate per epoch: each new value traces, as a top-level number does. The probe replays every trace
with that element a scalar tensor and runs both on the same inputs; the edit wraps the element where the
call writes it. A tuple the program built elsewhere (``pair = (images, label); overlay(pair)``) has no
element to wrap at the call: no edit. Counts are TensorFlow's own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import edited_steps, ran_program, recorded, run_in

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import tensorflow as tf

images = tf.reshape(tf.range(20, dtype=tf.float32), (2, 10)) / 20.0
w = tf.Variable(tf.ones([10, 3]))


@tf.function
def overlay(data):
    x, label = data
    return x + tf.one_hot(label, 10, dtype=x.dtype)


@tf.function
def built(data):
    x, label = data
    return x * tf.cast(label, x.dtype)


@tf.function
def packed(x, hp):
    return x * tf.convert_to_tensor([hp["lr"], 1e-3], dtype=tf.float64)


@tf.function
def sgd(x, hp):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(x @ w))
    w.assign_sub(hp["lr"] * tape.gradient(loss, w))
    return loss


for label in range(4):
    print("overlay", label, float(tf.reduce_sum(overlay((images, label)))))
    pair = (images, label)
    print("built", label, float(tf.reduce_sum(built(pair))))
for epoch in range(3):
    print("sgd", epoch, float(sgd(images, {"lr": 0.1 / (1 + epoch), "name": "plain"})))
    print("packed", epoch, packed(tf.ones([2], tf.float64), {"lr": 0.5 ** (epoch + 1)}).numpy().tolist())
for f in (overlay, built, sgd, packed):
    print("traces", f.__name__, f.experimental_get_tracing_count())
"""


def test_an_element_written_at_the_call_site_becomes_a_tensor_tensorflow_checked_and_counts_drop(
    tmp_path: Path,
) -> None:
    before, functions = recorded(tmp_path / "recorded", PROGRAM)
    assert before.traces == {"overlay": 4, "built": 4, "sgd": 3, "packed": 3}
    # A float packed with float64 numbers keeps a Python float's precision: float64, though every recorded
    # value (0.5, 0.25, 0.125) is exact in float32 and a float32 tensor gives the same results on them.
    for name, dtype in (("overlay", "int64"), ("sgd", "float32"), ("packed", "float64")):
        steps = edited_steps(functions[name])
        assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
            ("tensor-argument", "safe", "tensorflow")
        ], name
        # Run both ways on every recorded trace's inputs (the variable sgd assigns restored after each run).
        assert steps[0]["checked_inputs"] >= 8, name
        assert [e["text"].endswith(f"dtype=tf.{dtype})") for e in steps[0]["edits"]] == [True], name
    # The tuple is built on another line: nothing to wrap where the call is, no edit.
    assert edited_steps(functions["built"]) == []
    copy = tmp_path / "applied"
    shutil.copytree(tmp_path / "recorded", copy)
    done = run_in(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    after = ran_program(copy)
    assert after.traces == {"overlay": 1, "built": 4, "sgd": 1, "packed": 1}
    assert after.results == before.results
