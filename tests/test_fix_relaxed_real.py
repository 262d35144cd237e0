"""Issue 38 on real TensorFlow: a ``reduce_retracing`` step is asked of TensorFlow, Python values and all.

``reduce_retracing=True`` is the only declaration that fits a function taking a Python value beside
its tensors (a ``mode`` flag), and it was unsafe for every function: no signature text can say what
its relaxed trace sees. The probe now traces each recorded call with the sizes that varied open and
the Python values as recorded, and TensorFlow runs that trace beside the recorded one. ``loss_fn`` is
safe so, and ``--apply`` lowers TensorFlow's own count with the same output, on other sizes too;
``spread`` divides by the static batch size in a helper its def does not show, which a relaxed trace
reads as None: the results differ, and the step stays unsafe.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import ran_program, recorded, run_in
from tfretrace.fix.kinds.reduce_retracing import KIND

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import tensorflow as tf

SIZES = [int(s) for s in sys.argv[1:]] or [32, 14, 8]


def per_row(t):
    n = t.shape[0]  # the static batch size: None in a relaxed trace
    return t / float(n if n is not None else 1)


@tf.function
def loss_fn(pred, y, mode):
    err = tf.square(pred - y) if mode == 0 else tf.abs(pred - y)
    return tf.reduce_mean(err, axis=1)


@tf.function
def spread(pred, mode):
    return per_row(pred) * (2.0 if mode == 0 else 1.0)


@tf.function
def noted(pred, mode):
    tf.print("noted", output_stream=sys.stderr)  # an effect: TensorFlow does not run it to compare
    return per_row(pred) * (2.0 if mode == 0 else 1.0)


@tf.function
def mean_of(v, mode):
    return per_row(tf.reshape(v, [-1, 1])) * (1.0 if mode == 0 else 2.0)


data = tf.reshape(tf.range(64, dtype=tf.float32), (32, 2)) / 10.0
for epoch in range(2):
    for size in SIZES:
        print("loss", epoch, size, float(tf.reduce_sum(loss_fn(data[:size], data[:size] * 0.5, 0))))
        print("spread", epoch, size, float(tf.reduce_sum(spread(data[:size], 0))))
        print("noted", epoch, size, float(tf.reduce_sum(noted(data[:size], 0))))
for size in SIZES:
    # A variable of each size: tensor-argument passes it as a tensor, which the run never traced.
    print("mean_of", size, float(tf.reduce_sum(mean_of(tf.Variable(tf.range(float(size))), 0))))
for f in (loss_fn, spread, noted, mean_of):
    print("traces", f.__name__, f.experimental_get_tracing_count())
"""


def _step(function: dict[str, object]) -> dict[str, object]:
    plan = function["plan"]
    assert isinstance(plan, list)
    steps = [s for s in plan if s.get("kind") == "reduce-retracing"]
    assert len(steps) == 1, plan
    step: dict[str, object] = steps[0]
    return step


def test_a_relaxed_trace_beside_a_python_value_is_asked_and_applied(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "recorded", PROGRAM)
    assert before.traces == {"loss_fn": 3, "spread": 3, "noted": 3, "mean_of": 3}

    safe = _step(functions["loss_fn"])
    assert (safe["safety"], safe.get("checked"), safe["traces_after"]) == ("safe", "tensorflow", 2)
    unsafe = _step(functions["spread"])
    assert unsafe["safety"] == "unsafe" and unsafe.get("checked") is None
    # TensorFlow was asked: the reason is what it said, not the kind's reason for an unasked step.
    assert unsafe["unsafe_reason"] not in (None, KIND.safety.never_safe)
    # Not run (a print), and a variable an earlier step passes as a tensor: not vouched for.
    for name in ("noted", "mean_of"):
        assert (_step(functions[name])["safety"], _step(functions[name]).get("checked")) == ("unsafe", None), name

    copy = tmp_path / "applied"
    shutil.copytree(tmp_path / "recorded", copy)
    done = run_in(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    after = ran_program(copy)
    # TensorFlow's own counts: loss_fn as predicted; spread untouched (its step is unsafe).
    assert after.traces == {"loss_fn": 2, "spread": 3, "noted": 3, "mean_of": 3}
    assert after.results == before.results
    # Other sizes: the edited program prints what the original prints.
    other = ("30", "5", "17", "30")
    assert ran_program(copy, "prog.py", *other).results == ran_program(tmp_path / "recorded", "prog.py", *other).results
