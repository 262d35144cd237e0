"""An argument some calls pass as a tensor and others as Python ints: only the ints become tensors, of its dtype.

Forward-forward style scoring overlays a label on the inputs: while training the labels are an int32
tensor, while scoring each class is a Python int (one trace each). The ints become int32 tensors at
their call site (the dtype the program's own tensor has there, which TensorFlow traced and ran beside
each trace), the training call is left as it is, and one signature then serves both: TensorFlow's own
counter sees one trace after ``--apply``, and the program prints the same, on other data too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import edited_steps, ran_program, recorded
from prog_runs import run_in as _run

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import numpy as np
import tensorflow as tf

seed, size = (int(n) for n in sys.argv[1:]) if sys.argv[1:] else (0, 12)
rng = np.random.default_rng(seed)
CLASSES = 4
x = tf.constant(rng.random((size, 3)).astype("float32"))
y = tf.constant(rng.integers(0, CLASSES, size).astype("int32"))
w = tf.constant(rng.standard_normal((3 + CLASSES, 1)).astype("float32"))


@tf.function
def overlay(x, label):
    marks = tf.one_hot(label, CLASSES) * tf.ones([tf.shape(x)[0], 1])
    return tf.concat([marks, x], axis=1)


def goodness(h):
    return tf.reduce_sum(tf.square(tf.matmul(h, w)), axis=1)


print("train", goodness(overlay(x, y)).numpy().round(5).tolist())
scores = tf.stack([goodness(overlay(x, label)) for label in range(CLASSES)], axis=1)
print("predicted", tf.argmax(scores, axis=1).numpy().tolist())
print("traces", "overlay", overlay.experimental_get_tracing_count())
"""


def test_python_ints_beside_a_tensor_become_tensors_of_its_dtype_and_one_signature_serves_both(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, PROGRAM)
    function = functions["overlay"]
    steps = edited_steps(function)
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
        ("tensor-argument", "safe", "tensorflow"), ("input-signature", "safe", "tensorflow"),
    ]
    # Only the scoring line's int is wrapped, as the training tensor's dtype; the training call is not touched.
    assert [e["text"] for e in steps[0]["edits"]] == ["tf.constant(label, dtype=tf.int32)"]
    assert function["fix_counts"]["apply"] == 1
    copy = tmp_path / "applied"
    shutil.copytree(folder, copy)
    done = _run(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    after = ran_program(copy)
    assert before.traces == {"overlay": 5} and after.traces == {"overlay": 1}
    assert after.results == before.results
    other, original = ran_program(copy, "prog.py", "3", "7"), ran_program(folder, "prog.py", "3", "7")
    assert other.results == original.results and other.traces == {"overlay": 1}


UNRECORDED = """\
import tensorflow as tf


@tf.function
def score(x, label):
    return tf.reduce_sum(x * tf.cast(label, tf.float32) + tf.cast(label * 2 // 3, tf.float32))


def both(x, labels):
    return score(x, labels[0]) + score(x, labels[1])


train = tf.function(both)
x = tf.ones((4,))
labels = tf.constant([1, 2, 3], dtype=tf.int64)
print("train", float(train(x, labels)))
for k in range(4):
    print("score", k, float(score(x, k)))
print("traces", "score", score.experimental_get_tracing_count())
"""


def test_python_ints_beside_a_tensor_call_at_a_line_never_recorded_are_left_as_they_are(tmp_path: Path) -> None:
    # The tensor calls inside `both` run within another tf.function: their line is not a recorded site, and
    # wrapping it (tf.constant of a symbolic tensor) would break the program. No tensor-argument edit.
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, UNRECORDED)
    function = functions["score"]
    assert not [s for s in edited_steps(function) if s["kind"] == "tensor-argument"]
    done = _run(folder, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "tf.constant(labels" not in (folder / "prog.py").read_text()
    assert ran_program(folder).results == before.results
