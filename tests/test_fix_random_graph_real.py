"""A random draw in code the traced body calls (a Keras layer, a helper), which only TensorFlow's graphs show.

Two programs that fix no seed in TensorFlow: in the first, a Keras layer draws with ``tf.random.normal``
and nothing in the file draws from NumPy or Python: fewer traces keep no stream a run could repeat, so
the step is safe and announced (``random-stream``), and ``--apply`` writes it. In the second, a helper
the body calls draws from NumPy too, after ``np.random.seed``: the helper's draws at trace time are part
of a stream the program repeats, so the step stays unsafe and ``--apply`` leaves the program as it printed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import edited_steps, ran_program, recorded, run_in

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

LAYER = """\
import keras
import tensorflow as tf


class Noise(keras.layers.Layer):
    def call(self, x):
        return x + tf.random.normal(tf.shape(x)) * 0.0


noise = Noise()


@tf.function
def sampled(x, scale):
    return tf.reduce_sum(noise(x)) * scale


for scale in (1.0, 2.0, 3.0):
    print("sampled", float(sampled(tf.ones([4, 2]), scale)))
print("traces sampled", sampled.experimental_get_tracing_count())
"""

HELPER = """\
import numpy as np
import tensorflow as tf

np.random.seed(0)


def jitter(x):
    return x + tf.random.normal(tf.shape(x)) * 0.0 + np.random.uniform() * 0.0  # 0.0 in every trace


@tf.function
def jittered(x, scale):
    return tf.reduce_sum(jitter(x)) * scale


for scale in (1.0, 2.0, 3.0):
    print("jittered", round(float(jittered(tf.ones([4, 2]), scale)), 4))
print("numpy after", round(float(np.random.uniform()), 4))
print("traces jittered", jittered.experimental_get_tracing_count())
"""


def _applied(folder: Path) -> None:
    done = run_in(folder, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_draw_in_a_called_layer_of_an_unseeded_run_is_safe_and_announced(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "layer", LAYER)
    steps = edited_steps(functions["sampled"])
    assert [(s["kind"], s["safety"], s["changes"]) for s in steps] == [("tensor-argument", "safe", "random-stream")]
    copy = tmp_path / "layer_applied"
    shutil.copytree(tmp_path / "layer", copy)
    _applied(copy)
    after = ran_program(copy)
    assert before.traces == {"sampled": 3} and after.traces == {"sampled": steps[0]["traces_after"]} == {"sampled": 1}
    assert after.results == before.results  # its noise is multiplied by 0 here: the printed sums stay


def test_a_helper_that_also_draws_from_seeded_numpy_keeps_the_step_unsafe(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "helper", HELPER)
    steps = edited_steps(functions["jittered"])
    assert [(s["kind"], s["safety"], s["changes"]) for s in steps] == [("tensor-argument", "unsafe", "random-stream")]
    copy = tmp_path / "helper_applied"
    shutil.copytree(tmp_path / "helper", copy)
    _applied(copy)
    after = ran_program(copy)
    assert (after.traces, after.results) == (before.traces, before.results) == ({"jittered": 3}, before.results)
