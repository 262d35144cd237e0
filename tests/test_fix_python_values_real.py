"""Python numbers and bools passed as tensors, of the dtype TensorFlow traced the body with, on real TensorFlow.

One program holds six functions: a bool flag in a user ``if`` forwarded to a Keras model whose
layers take a symbolic ``training`` (TensorFlow accepts it as a tf.bool tensor), the same flag
forwarded to a BatchNormalization model (TensorFlow refuses it: no edit), a learning rate decayed
per epoch and subtracted from float64 weights and a list of numbers multiplied with float64 data (a
float32 tensor fails there; TensorFlow traces them as float64), a count whose body says
``tf.constant(n)`` (the step edits the body too: not probed), and a tf.Module method taking the flag
(probed on its live instance). It prints its results and, last, TensorFlow's own trace count per
function. The program is recorded once, fixed with ``--apply`` and with ``--apply --unsafe-fixes``
in two copies, and run again, on the recorded data and on another learning rate. TensorFlow also
compares each trace's graph with the graph of the value as a tensor: the rates and the list are
used only as data (safe, written by ``--apply``); the flags steer the graph, and TensorFlow, running
both on the same inputs, finds the same results for each recorded flag (safe too, issue 38).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prog_runs import Ran, edited_steps, ran_program, saved_session
from prog_runs import run_in as _run
from tfretrace._tf.versions import keras_in_use

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
dense = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
normed = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()])
x = tf.reshape(tf.range(8, dtype=tf.float32), (2, 4)) / 8.0
first_lr = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1  # another run's data

W = tf.Variable(np.array([1.0, -2.0, 0.5]))  # float64 weights
X64 = tf.constant(np.array([[0.3, 0.1, -0.2], [1.0, 0.5, 0.25]]))


@tf.function
def augmented_step(x, lr, augment):
    if augment:
        x = x * 2.0
    return tf.reduce_sum(dense(x, training=augment)) * lr


@tf.function
def normed_step(x, lr, training):
    return tf.reduce_sum(tf.square(normed(x, training=training))) * lr


@tf.function
def decayed_step(lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(tf.linalg.matvec(X64, W)))
    W.assign_sub(lr * tape.gradient(loss, W))
    return loss


@tf.function
def weighted(weights):
    return tf.reduce_sum(X64[0] * weights)


@tf.function
def ramp(n):
    count = tf.cast(tf.constant(n), tf.float32)
    return tf.reduce_sum(tf.ones([n])) / count


class Trainer(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(1.5)

    @tf.function
    def step(self, x, training):
        if training:
            x = x + 1.0
        return tf.reduce_sum(dense(x, training=training)) * self.scale


trainer = Trainer()

lr = first_lr
for epoch in range(4):
    for flag in (True, False):
        print("augmented", epoch, flag, f"{float(augmented_step(x, lr, flag)):.5f}")
        print("normed", epoch, flag, f"{float(normed_step(x, lr, flag)):.5f}")
        print("trainer", epoch, flag, f"{float(trainer.step(x, flag)):.5f}")
    print("decayed", epoch, f"{float(decayed_step(lr)):.6f}")
    print("weighted", epoch, f"{float(weighted([lr, 1.0, 0.5])):.6f}")
    print("ramp", epoch, float(ramp(epoch + 2)))
    lr *= 0.9
for f in (augmented_step, normed_step, decayed_step, weighted, ramp):
    print("traces", f.__name__, f.experimental_get_tracing_count())
print("traces", "Trainer.step", trainer.step.experimental_get_tracing_count())
"""

FUNCTIONS = ("augmented_step", "normed_step", "decayed_step", "weighted", "ramp", "Trainer.step")
# Keras 2's BatchNormalization takes a symbolic `training` (it picks its branch in the graph);
# Keras 3's refuses it. TensorFlow's answer differs, and so does the plan: both are asserted.
KERAS2 = (_keras := keras_in_use()) is not None and _keras[1].split(".")[0] == "2"
OTHER_LR = "0.37"


def _program(folder: Path, *args: str) -> Ran:
    return ran_program(folder, "flags.py", *args)


@dataclass(frozen=True)
class Recorded:
    """The recorded session's functions, and the program as python ran it before any fix."""

    folder: Path
    functions: dict[str, dict[str, Any]]
    before: Ran
    before_other: Ran

    def fixed(self, name: str, *options: str) -> Path:
        """A copy of the recorded folder with ``tfretrace fix --apply OPTIONS`` made."""
        copy = self.folder.parent / name
        shutil.copytree(self.folder, copy)
        done = _run(copy, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
        assert done.returncode == 0, done.stderr[-3000:]
        return copy


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("values") / "recorded"
    folder.mkdir()
    (folder / "flags.py").write_text(PROGRAM)
    before, before_other = _program(folder), _program(folder, OTHER_LR)
    functions = {f["name"]: f for f in saved_session(folder, "flags.py")["functions"]}
    return Recorded(folder, functions, before, before_other)


def test_tensorflow_chooses_each_dtype_and_refuses_what_it_cannot_trace(recorded: Recorded) -> None:
    # Fields, not words: each Python value made a tensor is a checked tensor-argument step whose
    # edit passes the dtype TensorFlow traced the body with. It is safe where every trace's graph
    # used the value only as data (a rate, a list of weights), unsafe where the graph depends on
    # it (a flag in a Python `if`, a Keras `training` that picks its layers' branches).
    steps = {name: edited_steps(recorded.functions[name]) for name in FUNCTIONS}
    # A flag in a Python `if` parts the graphs (autograph's tf.cond); TensorFlow then runs both on the
    # same inputs, to the same results for each recorded flag (issue 38): safe.
    normed = [("float32", "safe"), ("bool", "safe")] if KERAS2 else [("float32", "safe")]
    for name, expected in (("augmented_step", [("float32", "safe"), ("bool", "safe")]), ("normed_step", normed),
                           ("decayed_step", [("float64", "safe")]), ("weighted", [("float64", "safe")]),
                           ("Trainer.step", [("bool", "safe")])):
        assert [s["kind"] for s in steps[name]] == ["tensor-argument"] * len(expected), name
        assert all(s["checked"] == "tensorflow" for s in steps[name]), name
        got = [(s["edits"][0]["text"].rpartition("dtype=tf.")[2].rstrip(")"), s["safety"]) for s in steps[name]]
        assert got == expected, name
        assert all(bool(s.get("unsafe_reason")) == (s["safety"] == "unsafe") for s in steps[name]), name
        assert all(s["changes"] == "float-last-digits" for s in steps[name]), name
    # Run, not only traced: the flags' graphs part from the recorded ones, 8 inputs per recorded trace.
    for name, traces in (("augmented_step", 8), ("Trainer.step", 2)):
        flag = [s for s in steps[name] if s["edits"][0]["text"].endswith("dtype=tf.bool)")]
        assert [s.get("checked_inputs") for s in flag] == [traces * 8], name
    # Keras 3's BatchNormalization refuses a symbolic `training`: no edit for it, and the plan says
    # what TensorFlow said in the statement's python_use.
    refused = [s for s in recorded.functions["normed_step"]["plan"] if s["kind"] == "statement"
               and s["cause"] == "python-value-changed"]
    assert len(refused) == (0 if KERAS2 else 1) and all(s.get("python_use") for s in refused)
    # A body the step edits too (tf.constant(n) -> tf.convert_to_tensor(n)): TensorFlow traces the def
    # as the step writes it and runs it beside each recorded trace (issue 38): int64, safe.
    assert [(s["kind"], s.get("checked"), s["safety"]) for s in steps["ramp"]] == [
        ("tensor-argument", "tensorflow", "safe")
    ]
    assert steps["ramp"][0]["checked_inputs"] == 4 * 8


def test_apply_writes_the_values_used_as_data_and_unsafe_fixes_the_rest_with_the_same_results(
    recorded: Recorded,
) -> None:
    # --apply alone: only the safe steps (the rates, the list, the flags, the edited ramp: TensorFlow ran them) are
    # written;
    # TensorFlow's own count equals the prediction, and the program prints what it printed, on its data
    # and another's.
    applied = recorded.fixed("apply")
    assert (applied / "flags.py").read_text() != PROGRAM
    alone, alone_other = _program(applied), _program(applied, OTHER_LR)
    assert alone.results == recorded.before.results
    assert alone_other.results == recorded.before_other.results
    expected = {"augmented_step": 1, "normed_step": 1 if KERAS2 else 2, "decayed_step": 1, "weighted": 1, "ramp": 1,
                "Trainer.step": 1}
    assert {name: recorded.functions[name]["fix_counts"]["apply"] for name in FUNCTIONS} == expected
    assert alone.traces == expected
    assert alone_other.traces == expected
    # --unsafe-fixes: TensorFlow's own count equals the prediction, on this run's data and another's:
    # the flag and the rates are one trace where TensorFlow took a tensor; the refused flag keeps two.
    folder = recorded.fixed("unsafe", "--unsafe-fixes")
    after, after_other = _program(folder), _program(folder, OTHER_LR)
    predicted = {name: recorded.functions[name]["fix_counts"]["unsafe_fixes"] for name in FUNCTIONS}
    assert recorded.before.traces == {"augmented_step": 8, "normed_step": 8, "decayed_step": 4, "weighted": 4,
                                      "ramp": 4, "Trainer.step": 2}
    assert predicted == {"augmented_step": 1, "normed_step": 1 if KERAS2 else 2, "decayed_step": 1, "weighted": 1,
                         "ramp": 1, "Trainer.step": 1}
    assert after.traces == predicted
    assert after_other.traces == predicted
    assert after.results == recorded.before.results
    assert after_other.results == recorded.before_other.results
