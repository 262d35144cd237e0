"""A Python number two dicts deep in an argument: a step by hand whose count TensorFlow confirms.

One level deep in a dict written at the call site (``step(x, {"lr": lr})``) it is an edit TensorFlow checks
(tests/test_fix_literal_elements_real.py); deeper, the dict is the program's to change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prog_runs import ran_program, recorded

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import tensorflow as tf

w = tf.Variable(tf.ones([3]))


@tf.function
def step(x, hp):
    w.assign_sub(hp["lr"] * x * hp["opt"]["scale"])
    return tf.reduce_sum(w)


@tf.function
def sized(x, cfg):
    return tf.reduce_sum(x) * tf.cast(tf.reduce_sum(tf.range(cfg["n"])), tf.float32)


x = tf.ones([3])
for epoch in range(4):
    print(float(step(x, HP)))
    print(float(sized(x, {"n": epoch + 1})))
print("traces step", step.experimental_get_tracing_count())
print("traces sized", sized.experimental_get_tracing_count())
"""
WRITTEN = '{"lr": 0.1 / (epoch + 1), "opt": {"scale": 2.0 + epoch % 2}}'
BY_HAND = ('{"lr": tf.constant(0.1 / (epoch + 1), dtype=tf.float32), '
           '"opt": {"scale": tf.constant(2.0 + epoch % 2, dtype=tf.float32)}}')


def test_a_number_two_dicts_deep_is_a_step_by_hand_and_tensorflow_counts_what_it_predicts(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "recorded", PROGRAM.replace("HP", WRITTEN))
    assert before.traces == {"step": 4, "sized": 4}
    steps = [s for s in functions["step"]["plan"] if s["cause"] == "python-value-changed"]
    # One step per varying float: the dict's own "lr", written at the call site, an edit TensorFlow ran both
    # ways; the nested "scale" by hand (no edit), counted after the first.
    assert [(s["kind"], s.get("by"), s["traces_before"], s["traces_after"], bool(s.get("edits"))) for s in steps] == [
        ("tensor-argument", "tfretrace", 4, 2, True), ("advice", "hand", 2, 1, False)
    ]
    # An int in a dict gets no step by hand: a size or an index, which only TensorFlow can say a tensor replaces.
    assert not [s for s in functions["sized"]["plan"] if s["kind"] == "advice"]
    # Made by hand as the steps say, TensorFlow traces step once.
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "prog.py").write_text(PROGRAM.replace("HP", BY_HAND))
    after = ran_program(edited)
    assert after.traces["step"] == steps[-1]["traces_after"] == 1
