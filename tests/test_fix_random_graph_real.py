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

from prog_runs import Ran, edited_steps, ran_program, recorded, run_in

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


def _kinds(program: str, name: str, tmp_path: Path) -> tuple[list[tuple[str, str, str, int]], Ran, Ran]:
    """The edit steps of ``name`` (kind, safety, changes, traces after), and its run before and after ``--apply``."""
    before, functions = recorded(tmp_path / "recorded", program)
    copy = tmp_path / "applied"
    shutil.copytree(tmp_path / "recorded", copy)
    done = run_in(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    steps = [(s["kind"], s["safety"], s["changes"], s["traces_after"]) for s in edited_steps(functions[name])]
    return steps, before, ran_program(copy)


def test_a_draw_in_a_called_layer_of_an_unseeded_run_is_safe_and_announced(tmp_path: Path) -> None:
    steps, before, after = _kinds(LAYER, "sampled", tmp_path)
    assert steps == [("tensor-argument", "safe", "random-stream", 1)]
    assert (before.traces, after.traces) == ({"sampled": 3}, {"sampled": 1})  # as the step predicts
    assert after.results == before.results  # its noise is multiplied by 0 here: the printed sums stay


def test_a_helper_that_also_draws_from_seeded_numpy_keeps_the_step_unsafe(tmp_path: Path) -> None:
    steps, before, after = _kinds(HELPER, "jittered", tmp_path)
    assert steps == [("tensor-argument", "unsafe", "random-stream", 1)]
    assert (after.traces, after.results) == (before.traces, before.results) and before.traces == {"jittered": 3}
