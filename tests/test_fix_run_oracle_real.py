"""Issue 38 items 1-3 end to end: steps TensorFlow runs, asks on the live object, or frees of a random stream.

One program holds nine functions, each retracing avoidably: an int index (``x[i]``, a slice's
constants in each trace), an int folded into a constant (``n ** 3``), an int mixed with floats, a
body drawing unseeded random numbers, one drawing with an op seed, one drawing from TensorFlow
unseeded and from NumPy (whose seed TensorFlow cannot show), one drawing inside a Keras layer it
calls (which only TensorFlow's graphs show), a Keras train step whose model and optimizer are built at
its first call, and one given its model, optimizer and loss as arguments with a Python epoch. It
prints its results and, last, TensorFlow's own trace count per function. Recorded with
``tfretrace run --save``, it is fixed with ``--apply`` in a copy and run again; the same program
with ``keras.utils.set_random_seed`` is recorded too.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prog_runs import Ran, edited_steps, ran_program, saved_session
from prog_runs import run_in as _run

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import keras
import numpy as np
import tensorflow as tf

if sys.argv[1:] == ["seed"]:
    keras.utils.set_random_seed(1)
data = tf.reshape(tf.range(24, dtype=tf.float32), (8, 3)) / 8.0
model = keras.Sequential([keras.layers.Dense(2, kernel_initializer="ones")])
opt = keras.optimizers.SGD(0.01)


@tf.function
def pick(x, i):
    return x[i] * 2.0


@tf.function
def cubed(x, n):
    return x * tf.cast(n ** 3, tf.float32)


@tf.function
def annealed(x, n):
    return tf.reduce_sum(x) * (n / 8)


@tf.function
def noisy(x):
    return x + tf.random.normal(tf.shape(x)) * 0.0


@tf.function
def seeded(x):
    return x + tf.random.uniform(tf.shape(x), seed=7) * 0.0


@tf.function
def jittered(x):
    return x + tf.random.normal(tf.shape(x)) * 0.0 + np.random.uniform() * 0.0


class Noise(keras.layers.Layer):
    def call(self, x):
        return x + tf.random.normal(tf.shape(x)) * 0.0


noise = Noise()


@tf.function
def sampled(x):
    return noise(x) * 2.0


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


model2 = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
opt2 = keras.optimizers.SGD(0.01)


def mse(pred, target):
    return tf.reduce_mean(tf.square(pred - target))


@tf.function
def decayed_step(net, loss_fn, optimizer, x, y, epoch):
    with tf.GradientTape() as tape:
        loss = loss_fn(net(x), y)
    grads = tape.gradient(loss, net.trainable_variables)
    optimizer.apply_gradients(zip(grads, net.trainable_variables))
    optimizer.learning_rate.assign(0.01 * (1 - epoch / 4))
    return loss


for epoch in range(2):
    for i in range(4):
        print("pick", epoch, i, pick(data, i).numpy().tolist())
        print("cubed", epoch, i, float(tf.reduce_sum(cubed(data, i))))
        print("annealed", epoch, i, float(annealed(data, i + 1)))
        print("decayed", epoch, i, f"{float(decayed_step(model2, mse, opt2, data, data[:, :2], epoch)):.5f}")
    for size in (4, 4, 3, 2):
        print("noisy", epoch, size, float(tf.reduce_sum(noisy(data[:size]))))
        print("seeded", epoch, size, float(tf.reduce_sum(seeded(data[:size]))))
        print("jittered", epoch, size, float(tf.reduce_sum(jittered(data[:size]))))
        print("sampled", epoch, size, float(tf.reduce_sum(sampled(data[:size]))))
        print("train", epoch, size, f"{float(train_step(data[:size], data[:size, :2])):.5f}")
for f in (pick, cubed, annealed, noisy, seeded, jittered, sampled, train_step, decayed_step):
    print("traces", f.__name__, f.experimental_get_tracing_count())
"""

FUNCTIONS = ("pick", "cubed", "annealed", "noisy", "seeded", "jittered", "sampled", "train_step", "decayed_step")


def _program(folder: Path, *args: str) -> Ran:
    return ran_program(folder, "prog.py", *args)


def _functions(folder: Path, session: str, *args: str) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in saved_session(folder, "prog.py", *args, name=session)["functions"]}


@dataclass(frozen=True)
class Recorded:
    folder: Path
    functions: dict[str, dict[str, Any]]
    seeded_run: dict[str, dict[str, Any]]
    before: Ran


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("oracle") / "recorded"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM)
    before = _program(folder)
    return Recorded(folder, _functions(folder, "s.json"), _functions(folder, "seeded.json", "seed"), before)


def test_an_int_index_and_a_folded_constant_are_safe_where_tensorflow_ran_both(recorded: Recorded) -> None:
    # The graphs part (a slice's constants, one folded constant against Pow): TensorFlow ran each
    # recorded trace and the tensor's trace on 8 inputs per trace, to the same results.
    for name in ("pick", "cubed"):
        steps = edited_steps(recorded.functions[name])
        assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
            ("tensor-argument", "safe", "tensorflow")
        ], name
        assert steps[0]["checked_inputs"] == 4 * 8, name
        # int64: an int32 tensor would refuse the Python ints beyond its range the original took.
        assert steps[0]["edits"][0]["text"].endswith("dtype=tf.int64)"), name


def test_an_int_the_body_mixes_with_floats_becomes_a_float32_tensor_where_tensorflow_ran_both(
    recorded: Recorded,
) -> None:
    # `n / 8` is float64 for an int tensor of either width, which the float32 sum refuses: float32 is
    # asked last, and its graph (a division where each trace folded a constant) ran beside each trace.
    steps = edited_steps(recorded.functions["annealed"])
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [("tensor-argument", "safe", "tensorflow")]
    assert steps[0]["checked_inputs"] >= 4 and steps[0]["edits"][0]["text"].endswith("dtype=tf.float32)")


def test_a_step_given_its_model_optimizer_and_loss_as_arguments_is_asked_with_those_live_objects(
    recorded: Recorded,
) -> None:
    # TensorFlow keys a trace by the identity of an object argument and keeps only a weak reference to
    # it: the probe passes the live object again (it was "not asked" before), and runs both versions,
    # the variables they assign (the learning rate) restored after each run.
    steps = edited_steps(recorded.functions["decayed_step"])
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [("tensor-argument", "safe", "tensorflow")]
    assert steps[0]["checked_inputs"] >= 2 * 8


def test_a_train_step_that_built_its_model_is_asked_once_the_variables_exist(recorded: Recorded) -> None:
    steps = edited_steps(recorded.functions["train_step"])
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
        ("input-signature", "safe", "tensorflow")
    ]


def test_a_random_body_is_safe_only_in_a_run_that_fixed_no_seed(recorded: Recorded) -> None:
    # No seed anywhere: safe, announced. An op seed, a NumPy draw beside, or keras.utils.set_random_seed:
    # unsafe. `sampled` draws in a layer it calls, which its def does not show: TensorFlow's graphs do;
    # code it calls might draw from NumPy too, and this file does (`jittered`): unsafe even unseeded.
    unseeded = edited_steps(recorded.functions["noisy"])
    assert [(s["kind"], s["safety"], s["changes"]) for s in unseeded] == [("input-signature", "safe", "random-stream")]
    for name in ("seeded", "jittered", "sampled"):
        steps = edited_steps(recorded.functions[name])
        assert [(s["kind"], s["safety"], s["changes"]) for s in steps] == [
            ("input-signature", "unsafe", "random-stream")
        ], name
    for name in ("noisy", "seeded", "sampled"):
        steps = edited_steps(recorded.seeded_run[name])
        assert [(s["kind"], s["safety"], s["changes"]) for s in steps] == [
            ("input-signature", "unsafe", "random-stream")
        ], name


def test_apply_writes_them_and_tensorflow_counts_what_was_predicted_with_the_same_output(
    recorded: Recorded,
) -> None:
    copy = recorded.folder.parent / "applied"
    shutil.copytree(recorded.folder, copy)
    done = _run(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (copy / "prog.py").read_text() != PROGRAM
    after = _program(copy)
    predicted = {name: recorded.functions[name]["fix_counts"]["apply"] for name in FUNCTIONS}
    before = dict(recorded.before.traces)
    # One trace per epoch, and on Keras 2 one more: its optimizer makes its variables at the first
    # apply, which TensorFlow traces twice. The edit removes the second epoch's trace either way.
    assert before.pop("decayed_step") - predicted["decayed_step"] == 1
    assert before == {"pick": 4, "cubed": 4, "annealed": 4, "noisy": 3, "seeded": 3, "jittered": 3,
                      "sampled": 3, "train_step": 4}
    assert {k: v for k, v in predicted.items() if k != "decayed_step"} == {
        "pick": 1, "cubed": 1, "annealed": 1, "noisy": 1, "seeded": 3, "jittered": 3, "sampled": 3, "train_step": 2}
    assert after.traces == predicted
    assert after.results == recorded.before.results
