"""A list of Python numbers of one length whose values change: one tensor at the call site, checked by TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

PROGRAM = """\
import sys

import tensorflow as tf

scale_by = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


@tf.function
def scale(x, weights):
    w = tf.convert_to_tensor(weights, dtype=tf.float32)
    return x * w


x = tf.ones([3])
for i in range(8):
    print(round(float(tf.reduce_sum(scale(x, [scale_by * i, 2.0, 3.0]))), 4))
print("traces", scale.experimental_get_tracing_count())
"""


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def _results(done: subprocess.CompletedProcess[str]) -> tuple[list[str], int]:
    assert done.returncode == 0, done.stderr[-2000:]
    *values, count = done.stdout.strip().splitlines()
    return values, int(count.split()[-1])  # TensorFlow's own trace count, printed last


def test_a_list_of_changing_numbers_becomes_one_tensor_and_tensorflow_traces_once(tmp_path: Path) -> None:
    (tmp_path / "l.py").write_text(PROGRAM)
    before, traces_before = _results(_run("l.py", cwd=tmp_path))
    other_before, _ = _results(_run("l.py", "0.5", cwd=tmp_path))
    assert traces_before == 8
    recorded = _run("-m", "tfretrace", "run", "--save", "s.json", "l.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    (function,) = [f for f in json.loads((tmp_path / "s.json").read_text())["functions"] if f["name"] == "scale"]
    edited = [s for s in function["plan"] if s.get("edits")]
    assert [(s["cause"], s["kind"], s["traces_after"]) for s in edited] == [("python-value-changed",
                                                                             "tensor-argument", 1)]
    # TensorFlow traced the body with the list a float32 tensor of its length, to the run's outputs,
    # and each trace's graph used the list only as data (its constant where the tensor is read):
    # safe, written by --apply alone, which this program's results then check.
    assert edited[0]["checked"] == "tensorflow"
    assert edited[0]["safety"] == "safe" and "unsafe_reason" not in edited[0]
    applied = _run("-m", "tfretrace", "fix", "s.json", "--apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr[-2000:]
    after, traces_after = _results(_run("l.py", cwd=tmp_path))
    assert traces_after == 1 and after == before
    other_after, _ = _results(_run("l.py", "0.5", cwd=tmp_path))  # other data: same results
    assert other_after == other_before
