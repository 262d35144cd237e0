"""``tfretrace run --prevent``, TFRETRACE_PREVENT and the pytest plugin's --tfretrace-prevent, in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf
pytest_plugins = ["pytester"]

PROGRAM = """
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_sum(x * 2.0)

print([float(train_step(tf.ones([n, 3]))) for n in (32, 32, 32, 5)])
print("TRACES", train_step.experimental_get_tracing_count())
"""


def _tfretrace(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", **env)
    full.pop("TFRETRACE_PREVENT", None) if "TFRETRACE_PREVENT" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "tfretrace", *args],
        capture_output=True, text=True, cwd=cwd, env=full, timeout=300, check=False,
    )


def test_two_run_workflow_with_the_env_variable(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    first = _tfretrace("run", "--save", "profile.json", "--fail-on-retrace", "train.py", cwd=tmp_path)
    assert first.returncode == 1, first.stderr  # it retraced: the partial batch
    assert "TRACES 2" in first.stdout

    # The function moves down its file: its key (module, name, code) still finds the profile entry.
    (tmp_path / "train.py").write_text("# a comment\n\n" + PROGRAM, encoding="utf-8")
    second = _tfretrace("run", "--save", "run.json", "--fail-on-retrace", "train.py", cwd=tmp_path,
                        TFRETRACE_PREVENT="profile.json")
    assert second.returncode == 0, second.stderr  # what still retraces is what --fail-on-retrace counts
    assert "TRACES 1" in second.stdout  # TensorFlow's own count
    assert second.stdout.splitlines()[0] == first.stdout.splitlines()[0]  # same results
    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    (row,) = saved["prevention"]["functions"]
    assert saved["prevention"]["profile"] == "profile.json"
    assert (row["traces_without"], row["traces_with"], row["matched"]) == (2, 1, "exact")


def test_a_bad_profile_is_one_line_and_status_2(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    result = _tfretrace("run", "--prevent", "bad.json", "train.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""  # the program never ran
    assert result.stderr.count("\n") == 1 and "bad.json" in result.stderr


INNER = """
import tensorflow as tf

@tf.function
def step(x):
    return tf.reduce_sum(x)

def test_steps():
    for n in (8, 8, 3):
        step(tf.ones([n, 2]))
    assert step.experimental_get_tracing_count() == int(__import__("os").environ["EXPECTED"])
"""


def test_pytest_plugin_option(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("TFRETRACE_PREVENT", raising=False)
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setenv("EXPECTED", "2")
    # Record: a conftest saves the session of the whole run.
    pytester.makeconftest(
        "import tfretrace\n"
        "def pytest_sessionstart(session):\n    session.config._mon = tfretrace.Monitor(warn=False).start()\n"
        "def pytest_sessionfinish(session):\n    session.config._mon.stop().save('profile.json')\n"
    )
    recorded = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    recorded.assert_outcomes(passed=1)
    (pytester.path / "conftest.py").unlink()
    monkeypatch.setenv("EXPECTED", "1")
    prevented = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--tfretrace-prevent", "profile.json")
    prevented.assert_outcomes(passed=1)
    prevented.stdout.fnmatch_lines(["*tfretrace: prevention*", "*traces as written 2, with --prevent 1*"])


VARIABLES = """
import tensorflow as tf


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = None

    @tf.function
    def step(self, x):
        if self.w is None:
            self.w = tf.Variable(tf.ones([3]))
        return tf.reduce_sum(x * self.w)


model = Model()
print([float(model.step(tf.ones([n, 3]))) for n in (32, 32, 32, 5)])
print("TRACES", model.step.experimental_get_tracing_count())
"""


def _traces(result: subprocess.CompletedProcess[str]) -> int:
    return int(next(line for line in result.stdout.splitlines() if line.startswith("TRACES")).split()[1])


def test_a_prevented_run_gates_and_plans_as_the_program_is_written(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(VARIABLES, encoding="utf-8")
    first = _tfretrace("run", "--save", "profile.json", "train.py", cwd=tmp_path)
    assert _traces(first) == 3  # first, variable creation, the partial batch
    # The variable-creating step's general warm-up is the warm-up's, not a retrace.
    second = _tfretrace("run", "--prevent", "profile.json", "--no-learn", "--fail-on-retrace",
                        "--save", "prevented.json", "train.py", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert _traces(second) == 2
    saved = json.loads((tmp_path / "prevented.json").read_text(encoding="utf-8"))
    (row,) = saved["prevention"]["functions"]
    assert (row["traces_without"], row["traces_with"], row["traces_after_warmup"]) == (3, 2, 0)
    (step,) = [f for f in saved["functions"] if f["name"] == "Model.step"]
    assert step["retraces"] == 0 and step["plan"]  # planned as if prevention were off
    # --verify measures the edited program without prevention: what the row predicted.
    verified = _tfretrace("fix", "prevented.json", "--verify", "--", "python", "train.py", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    again = json.loads((tmp_path / "prevented.json").read_text(encoding="utf-8"))
    (step_again,) = [f for f in again["functions"] if f["name"] == "Model.step"]
    assert [s["verified"] for s in step_again["plan"] if "verified" in s] == [row["traces_fixed"]]
    # The plan's edits, applied: the program as written now traces what the row predicted.
    applied = _tfretrace("fix", "prevented.json", "--apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    plain = subprocess.run([sys.executable, "train.py"], capture_output=True, text=True, cwd=tmp_path,
                           env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300, check=False)
    assert _traces(plain) == row["traces_fixed"] < 3


def test_verify_measures_the_program_without_prevention(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace.fix.verify import verify
    from tfretrace.records.session import load

    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    assert _tfretrace("run", "--save", "profile.json", "train.py", cwd=tmp_path).returncode == 0
    # The project asks for prevention, and so does the environment: --verify measures neither.
    (tmp_path / "pyproject.toml").write_text('[tool.tfretrace.run]\nprevent = "profile.json"\n', encoding="utf-8")
    monkeypatch.setenv("TFRETRACE_PREVENT", "profile.json")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    result = verify(load(tmp_path / "profile.json"), [], ["python", "train.py"], tmp_path)
    assert result.exit_status == 0 and result.session is not None
    assert result.session.prevention is None
    (step,) = result.session.functions
    assert step.traces == 2  # the partial batch traced: nothing warmed it
