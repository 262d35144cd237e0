"""Issue 38: a tf.Module that builds its weights on its first call, reading ``x.shape[-1]``, called on many batch sizes.

``x.shape[-1]`` of a rank-2 input is its dimension 1, the same in every call: a signature that opens
dimension 0 keeps it, and TensorFlow, asked once the weights exist, traces and runs it as every recorded
trace. ``Seq`` calls two such modules (``Dense``): its own record has no variable-creation trace (the
variables are theirs), yet its first call builds them, so a signature opening their input's last
dimension would make the edited program fail there; only the sizes every call had stay open.
``Scaled`` reads ``x.shape[-2]``, dimension 0, the one that varies: no signature opening it is written
as safe. Counts are TensorFlow's own (``experimental_get_tracing_count()``); the fix is applied to a
copy and run on another seed too.
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


class Linear(tf.Module):
    def __init__(self):
        super().__init__()
        self.built = False

    @tf.function
    def __call__(self, x):
        if not self.built:
            self.w = tf.Variable(tf.ones([x.shape[-1], 1]) * 0.5)
            self.b = tf.Variable(tf.zeros([1]))
            self.built = True
        return tf.matmul(x, self.w) + self.b


class Dense(tf.Module):
    def __init__(self):
        super().__init__()
        self.built = False

    @tf.function
    def __call__(self, x):
        if not self.built:
            self.w = tf.Variable(tf.ones([x.shape[-1], 1]) * 0.25)
            self.built = True
        return tf.matmul(x, self.w)


class Seq(tf.Module):
    def __init__(self):
        super().__init__()
        self.a = Dense()
        self.c = Dense()

    @tf.function
    def __call__(self, x):
        return self.c(tf.nn.relu(self.a(x)))


class Scaled(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.ones([3, 1]))

    @tf.function
    def __call__(self, x):
        return tf.matmul(x, self.w) * x.shape[-2]


seed = int(sys.argv[1]) if sys.argv[1:] else 0
rng = np.random.default_rng(seed)
lin, seq, scaled = Linear(), Seq(), Scaled()
for n in rng.integers(2, 20, size=7):
    x = tf.constant(rng.normal(size=(int(n), 3)).astype("float32"))
    print(int(n), *(float(tf.reduce_sum(f(x))).hex() for f in (lin, seq, scaled)))
print("traces", "Linear", lin.__call__.experimental_get_tracing_count())
print("traces", "Seq", seq.__call__.experimental_get_tracing_count())
print("traces", "Scaled", scaled.__call__.experimental_get_tracing_count())
"""


@pytest.fixture(scope="module")
def lazy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ran, dict[str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("lazy") / "recorded"
    before, functions = recorded(folder, PROGRAM)
    return folder, before, {name.partition(".")[0]: f for name, f in functions.items()}


def test_the_last_dimension_read_keeps_the_signature_safe(lazy: tuple[Path, Ran, dict[str, dict[str, Any]]]) -> None:
    _folder, _before, functions = lazy
    steps = [(s["kind"], s["safety"], s.get("checked")) for s in edited_steps(functions["Linear"])]
    assert steps == [("input-signature", "safe", "tensorflow")]
    assert functions["Linear"]["fix_counts"]["apply"] == 2  # the first call's trace and the one that made variables
    (seq,) = edited_steps(functions["Seq"])
    assert (seq["kind"], seq["safety"]) == ("input-signature", "safe")
    # Scaled reads the dimension that varies: nothing safe opens it.
    assert all(s["safety"] != "safe" for s in edited_steps(functions["Scaled"]) if s["kind"] == "input-signature")


def test_apply_lowers_tensorflows_count_and_keeps_the_output(lazy: tuple[Path, Ran, dict[str, dict[str, Any]]]) -> None:
    folder, before, _functions = lazy
    copy = applied_copy(folder)
    after = ran_program(copy)
    assert before.traces["Linear"] > 2
    assert after.traces["Linear"] == 2
    assert after.traces["Seq"] == 1 < before.traces["Seq"]
    assert after.traces["Scaled"] == before.traces["Scaled"]
    assert after.results == before.results
    other_before, other_after = ran_program(folder, "prog.py", "7"), ran_program(copy, "prog.py", "7")
    assert other_after.results == other_before.results
    assert other_after.traces["Linear"] == 2 < other_before.traces["Linear"]
