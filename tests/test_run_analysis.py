"""The analysis stage of ``tfretrace run``: the probe runs the program's bodies only where a plan is asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

# Each trace of ``step`` appends a line to traced.log: the body's trace-time Python, as a
# program's own logging or trace counter would see it.
PROGRAM = """
import tensorflow as tf

@tf.function
def step(x):
    with open("traced.log", "a") as log:
        log.write("traced\\n")
    return tf.reduce_sum(x * 2.0)

for n in (3, 4, 5):
    step(tf.ones([n]))
print("done")
"""


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", COLUMNS="100")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False)


def _traced(folder: Path) -> int:
    return len((folder / "traced.log").read_text(encoding="utf-8").splitlines())


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path


def test_plain_run_traces_the_bodies_exactly_as_python_does(program: Path) -> None:
    python = _run("prog.py", cwd=program)
    assert python.returncode == 0, python.stderr
    by_python = _traced(program)
    (program / "traced.log").unlink()
    run = _run("-m", "tfretrace", "run", "prog.py", cwd=program)
    assert run.returncode == 0, run.stderr
    assert run.stdout == python.stdout
    # No probe after the program: the trace-time Python ran exactly as often as under python.
    assert _traced(program) == by_python == 3


def test_a_saved_run_says_how_often_the_probe_ran_the_bodies(program: Path) -> None:
    run = _run("-m", "tfretrace", "run", "--save", "s.json", "prog.py", cwd=program)
    assert run.returncode == 0, run.stderr
    extra = _traced(program) - 3
    saved = json.loads((program / "s.json").read_text(encoding="utf-8"))
    # The count is TensorFlow's (each fresh tf.function's tracing count), and it is what the file saw.
    assert extra > 0
    assert saved["analysis"]["probe_traces"] == extra
    assert f"ran the bodies' Python {extra} more time" in run.stderr.replace("\n", " ")


def test_a_plain_run_ends_with_the_run_that_asks_then_that_run_with_the_commands_that_check_and_apply(
        program: Path) -> None:
    def commands(err: str) -> list[str]:
        # The report's last lines: the commands (a long one folded with a backslash), nothing after.
        lines = err.rstrip().replace("\\\n", " ").splitlines()
        return [" ".join(line.split()) for line in lines if line.startswith(("Check:", "Apply:"))]

    run = _run("-m", "tfretrace", "run", "prog.py", cwd=program)
    assert run.returncode == 0, run.stderr
    assert "--save" not in run.stderr
    # Its one fix (an input_signature) needs TensorFlow's answer, which a plain run never asks.
    found = commands(run.stderr)
    assert [line.split(":")[0] for line in found] == ["Check"]
    assert found[0].endswith("run --fix-plan prog.py") and run.stderr.rstrip().endswith("prog.py")
    asked = _run("-m", "tfretrace", "run", "--fix-plan", "prog.py", cwd=program)
    assert asked.returncode == 0, asked.stderr
    found = commands(asked.stderr)
    assert [line.split(":")[0] for line in found] == ["Check", "Apply"]
    assert "fix --verify -- " in found[0] and found[1].endswith("fix --apply")
    assert asked.stderr.rstrip().endswith("fix --apply")
    kept = json.loads((program / ".tfretrace" / "last-session.json").read_text(encoding="utf-8"))
    assert any(step.get("edits") and step.get("safety") == "safe" for f in kept["functions"] for step in f["plan"])
