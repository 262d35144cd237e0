"""Every call path TensorFlow caches on counts: get_concrete_function with Python values, beside __call__."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

# The loop's calls trace once per float; the get_concrete_function calls then hit the cache. An
# edit at the loop's call site alone (pass n as a tensor) leaves them passing floats: measured,
# 8 -> 9 traces. TensorFlow's own counter is printed last.
PROGRAM = """\
import tensorflow as tf


@tf.function
def f(x, n):
    return x * n


for n in range(8):
    f(tf.ones([3]), float(n))
for v in range(8):
    f.get_concrete_function(tf.TensorSpec([3], tf.float32), float(v))
print("traces", f.experimental_get_tracing_count())
"""


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def _tf_count(done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.strip().splitlines()[-1].split()[-1])


def test_a_plan_counts_get_concrete_function_calls_and_tensorflow_agrees(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(PROGRAM)
    before = _tf_count(_run("r.py", cwd=tmp_path))
    recorded = _run("-m", "tfretrace", "run", "--fix-plan", "--save", "s.json", "r.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    session = json.loads((tmp_path / "s.json").read_text())
    (function,) = [f for f in session["functions"] if f["name"] == "f"]
    assert function["traces"] == before == 8
    assert function["concrete_python_sites"] == ["r.py:12"]
    # No step edits only the loop's call site; whatever the plan applies, TensorFlow measures its prediction.
    steps = function["plan"]
    assert not any(s.get("kind") == "tensor-argument" and s.get("edits") for s in steps)
    predicted = min(s["traces_after"] for s in steps if s.get("edits"))
    applied = _run("-m", "tfretrace", "fix", "s.json", "--apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr[-2000:]
    after = _tf_count(_run("r.py", cwd=tmp_path))
    assert after == predicted < before
