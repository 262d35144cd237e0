"""Subprocess tests of ``tfretrace run`` with the real monitor and TensorFlow (kept few: ~4 s each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tfretrace

pytestmark = pytest.mark.tf

PROGRAM = """
import json, sys
import tensorflow as tf

print(json.dumps({"argv": sys.argv, "name": __name__}))

@tf.function
def train_step(x):
    return tf.reduce_sum(x)

for n in range(3, 7):
    train_step(tf.ones([2, n]))
if "--raise" in sys.argv:
    raise RuntimeError("the script failed")
if "--exit" in sys.argv:
    sys.exit(int(sys.argv[-1]))
"""


def _tfretrace(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "tfretrace", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=300, check=False,
    )


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def test_run_script_keeps_argv_exit_status_and_saves(program: Path, tmp_path: Path) -> None:
    saved = tmp_path / "s.json"
    result = _tfretrace("run", "--save", str(saved), "train.py", "--flag", "--exit", "3",
                        cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert json.loads(result.stdout.splitlines()[0]) == {
        "argv": ["train.py", "--flag", "--exit", "3"], "name": "__main__"}
    assert "tfretrace: 1 function, 4 traces (3 retraces)" in result.stderr
    assert "#2 shape-changed" in result.stderr and "x: shape (2, 3) -> (2, 4)" in result.stderr
    assert f"Re-render: tfretrace report {saved} -o report.html" in result.stderr
    session = tfretrace.load(saved)
    assert session.function("train_step").main_cause == "shape-changed"


def test_run_script_that_raises_reports_then_fails(program: Path, tmp_path: Path) -> None:
    result = _tfretrace("run", "--fail-on-retrace", "train.py", "--raise", cwd=tmp_path)
    assert result.returncode == 1
    err = result.stderr
    assert "RuntimeError: the script failed" in err
    assert err.index("Traceback") < err.index("tfretrace: 1 function")
    assert "(--fail-on-retrace)" not in err  # the script's own failure is the verdict


def test_run_module_with_fail_on_retrace(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text(PROGRAM, encoding="utf-8")
    html = tmp_path / "r.html"
    result = _tfretrace("run", "--fail-on-retrace", "-o", str(html), "-m", "pkg.train", "a",
                        cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    seen = json.loads(result.stdout.splitlines()[0])
    assert seen == {"argv": [str(tmp_path / "pkg" / "train.py"), "a"], "name": "__main__"}
    assert "retracing found in train_step (--fail-on-retrace)" in result.stderr
    assert "shape-changed" in html.read_text(encoding="utf-8")
