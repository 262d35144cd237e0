"""Issue 38 on real TensorFlow: a list literal passed where other calls pass a tuple, asked and written as the tuple.

``step`` only unpacks its argument: TensorFlow ran the list's trace beside the tuple's to the same
outputs, the step is safe, and ``--apply`` lowers TensorFlow's own count with the same output, on other
data too. ``grow`` tells a tuple from a list (``isinstance``): the outputs differ and the step stays unsafe.
A Keras model's ``train_step``, which ``fit`` calls with a tuple and the loop below with a list, is the
real program this comes from (a TensorFlow tutorial's custom training).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import edited_steps, ran_program, recorded, run_in

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import keras
import tensorflow as tf

N = int(sys.argv[1]) if sys.argv[1:] else 2


@tf.function
def step(batch, scale):
    x, y = batch
    return tf.reduce_sum(x * y) * scale


@tf.function
def grow(batch):
    batch = list(batch) if isinstance(batch, tuple) else batch + [batch[0]]
    return tf.add_n(batch)


@tf.function
def scaled(batch):
    return tf.nest.map_structure(lambda t: t * 2.0, batch)  # a list in, a list out


SCALE = 1.0


@tf.function
def weighted(batch):
    x, y = batch
    return tf.reduce_sum(x * y) * SCALE  # SCALE as it was when each trace was made


class Plain(tf.Module):
    @tf.function
    def train_step(self, data):
        x, y = data
        return tf.reduce_sum(x * y)


class Other(tf.Module):
    @tf.function
    def train_step(self, data):
        x, y = data
        return tf.reduce_sum(x * y) + (100.0 if isinstance(data, list) else 0.0)


class Trained(keras.Sequential):
    @tf.function
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


model = Trained([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
xs = tf.reshape(tf.range(16.0), (8, 2)) / 16.0
ys = tf.reduce_sum(xs, axis=1, keepdims=True)
data = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(4)
model.fit(data, epochs=1, verbose=0)
other, plain = Other(), Plain()
first = tf.constant([1.0, 2.0])
print("weighted", float(weighted((first, first))))
SCALE = 2.0
print("weighted", float(weighted([first, first])))
print("scaled", scaled((first, first))[0].numpy().tolist())
out = scaled([first, first])
out.append(first)
print("scaled", len(out))
for epoch in range(N):
    for x, y in data:
        print("tuple", epoch, float(step((x[:, 0], y[:, 0]), 2.0)))
        print("list", epoch, float(step([x[:, 0], y[:, 0]], 2.0)))
        print("grow", epoch, grow([x, x]).numpy().tolist(), grow((x, x)).numpy().tolist())
        print("train", epoch, f"{float(model.train_step([x, y])['loss']):.6f}")
    print("plain", epoch, float(plain.train_step((x, y))))
    for net in (plain, other):
        # One call expression reaching two functions: Other's calls would change with Plain's edit.
        print("both", epoch, type(net).__name__, float(net.train_step([x, y])))
for name, f in (("step", step), ("grow", grow), ("train_step", model.train_step), ("weighted", weighted),
                ("scaled", scaled), ("plain", plain.train_step), ("other", other.train_step)):
    print("traces", name, f.experimental_get_tracing_count())
"""


def test_a_list_literal_is_written_as_the_tuple_other_calls_pass_where_tensorflow_ran_both(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "recorded", PROGRAM)
    kinds = {name: [(s["kind"], s["safety"], s.get("checked")) for s in edited_steps(functions[name])]
             for name in ("step", "grow", "Trained.train_step", "weighted", "scaled", "Plain.train_step")}
    assert kinds == {
        "step": [("tuple-argument", "safe", "tensorflow")],
        "grow": [("tuple-argument", "unsafe", None)],
        "Trained.train_step": [("tuple-argument", "safe", "tensorflow")],
        # The list call would run the tuple's own trace, made while SCALE was 1.0: TensorFlow ran that one.
        "weighted": [("tuple-argument", "unsafe", None)],
        # A list in, a list out: the tuple's trace returns a tuple.
        "scaled": [("tuple-argument", "unsafe", None)],
        # Its edited call also reaches Other.train_step, which tells a list from a tuple.
        "Plain.train_step": [("tuple-argument", "unsafe", "tensorflow")],
    }

    copy = tmp_path / "applied"
    shutil.copytree(tmp_path / "recorded", copy)
    done = run_in(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    after = ran_program(copy)
    predicted = {name: functions[name]["fix_counts"]["apply"] for name in ("step", "grow", "Trained.train_step")}
    assert after.traces == {**before.traces, "step": 1, "train_step": before.traces["train_step"] - 1}
    assert [after.traces["step"], after.traces["grow"], after.traces["train_step"]] == list(predicted.values())
    assert after.results == before.results
    assert ran_program(copy, "prog.py", "3").results == ran_program(tmp_path / "recorded", "prog.py", "3").results
