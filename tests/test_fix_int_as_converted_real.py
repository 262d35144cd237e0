"""Issue 38 on real TensorFlow: an int whose int64 tensor changes the outputs is written as TensorFlow converts it.

``doubled(i)`` returns ``tf.constant(i) + tf.constant(i)``: int32 for every int that fits, int64 beyond.
As an int64 tensor its output is int64, so int64 was refused and the int32 tensor left the step unsafe
(a value beyond int32 fails at the call site, where the original took it). ``tf.constant(step)``
converts the int as the body's own ``tf.constant`` did: int32 for every recorded value, int64 beyond,
where TensorFlow traced and ran the int64 version to the same values. The step is safe; a run that
passes an int beyond int32 prints what the original prints. ``ramp`` adds ``tf.range(n)`` to an int32
size: no int64 version traces, and it stays unsafe.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import ran_program, recorded, run_in

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import tensorflow as tf

N = int(sys.argv[1]) if sys.argv[1:] else 4


@tf.function
def doubled(i):
    return tf.constant(i) + tf.constant(i)


@tf.function
def ramp(x, n):
    return tf.reduce_sum(tf.range(n)) + tf.shape(x)[0]


x = tf.ones((3, 2))
for step in range(N):
    d = doubled(step)
    print("doubled", step, d.numpy(), d.dtype.name)
    r = ramp(x, step + 1)
    print("ramp", step, r.numpy(), r.dtype.name)
if sys.argv[2:] == ["big"]:
    step = 2**31 + 5
    d = doubled(step)
    print("doubled", step, d.numpy(), d.dtype.name)
for f in (doubled, ramp):
    print("traces", f.__name__, f.experimental_get_tracing_count())
"""


def test_an_int_is_written_as_tensorflow_converts_it_where_int64_changes_the_outputs(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "recorded", PROGRAM)
    assert before.traces == {"doubled": 4, "ramp": 4}
    [step] = [s for s in functions["doubled"]["plan"] if s.get("edits")]
    assert (step["kind"], step["safety"], step.get("checked")) == ("tensor-argument", "safe", "tensorflow")
    assert step["checked_inputs"] > 0
    sites = [e["text"] for e in step["edits"] if "step" in e["text"]]
    assert sites and set(sites) == {"tf.constant(step)"}
    [unsafe] = [s for s in functions["ramp"]["plan"] if s.get("edits")]
    assert (unsafe["kind"], unsafe["safety"]) == ("tensor-argument", "unsafe")

    copy = tmp_path / "applied"
    shutil.copytree(tmp_path / "recorded", copy)
    done = run_in(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    after = ran_program(copy)
    assert after.traces == {"doubled": 1, "ramp": 4}
    assert after.results == before.results
    # An int beyond int32 (never recorded): the original took it, and the edited program prints the same.
    original = ran_program(tmp_path / "recorded", "prog.py", "6", "big")
    edited = ran_program(copy, "prog.py", "6", "big")
    assert edited.results == original.results
    assert original.results[-1].split()[-1] == "int64"
    assert edited.traces["doubled"] == 2  # int32 for the six steps, int64 for the big one
