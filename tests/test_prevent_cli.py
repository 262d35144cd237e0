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


FIRST_LINES = """
import sys
LOADED = sorted(m for m in ("tensorflow", "keras", "tf_keras") if m in sys.modules)
import tensorflow as tf

@tf.function
def step(x):
    return tf.reduce_sum(x)

def test_tensorflow_is_loaded_by_the_tests():
    assert LOADED == []
    step(tf.ones([8, 2]))
"""


def test_prevention_does_not_load_tensorflow_before_the_program(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # What the program does before its import of TensorFlow (TF_USE_LEGACY_KERAS) must count.
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("TFRETRACE_PREVENT", raising=False)
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    recorded = _tfretrace("run", "--save", "profile.json", "train.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    (tmp_path / "late.py").write_text(
        "import sys\nprint('loaded first:', 'tensorflow' in sys.modules)\n" + PROGRAM, encoding="utf-8")
    run = _tfretrace("run", "--prevent", "profile.json", "late.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "loaded first: False"
    assert "TRACES 1" in run.stdout  # prevention still works once the program loads TensorFlow
    (pytester.path / "profile.json").write_bytes((tmp_path / "profile.json").read_bytes())
    pytester.makepyfile(test_first=FIRST_LINES)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--tfretrace-prevent", "profile.json")
    result.assert_outcomes(passed=1)


SAVED = """
import tempfile
import tensorflow as tf

class Doubler(tf.Module):
    @tf.function
    def f(self, x):
        return inner(x) * 2.0

@tf.function
def inner(x):  # called only inside f's traces
    return x + 1.0

module = Doubler()
for n in (1, 2, 3, 4):
    module.f(tf.ones([n]))
pipeline = tf.data.Dataset.range(3)
for n in (1, 2):
    list(pipeline.map(lambda i: tf.ones([n]) * tf.cast(i, tf.float32)))
tf.saved_model.save(module, tempfile.mkdtemp())
print("TRACES", module.f.experimental_get_tracing_count())
"""


def test_prevention_counts_a_saves_traces_and_names_functions_it_cannot_see(tmp_path: Path) -> None:
    (tmp_path / "save.py").write_text(SAVED, encoding="utf-8")
    first = _tfretrace("run", "--save", "profile.json", "save.py", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    without = int(first.stdout.split("TRACES")[1])  # TensorFlow's count: 4 calls, then the save's
    second = _tfretrace("run", "--prevent", "profile.json", "--save", "run.json", "save.py", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    with_ = int(second.stdout.split("TRACES")[1])
    prevention = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["prevention"]
    (row,) = [r for r in prevention["functions"] if r["name"].endswith("Doubler.f")]
    assert (row["traces_without"], row["traces_with"]) == (without, with_)
    assert prevention["prevented"] >= without - with_ > 0
    # inner (inside f's traces) and the map (by tf.data) did trace: not "not called".
    assert prevention["not_called"] == 0
    assert any("only inside other traces or by tf.data" in note for note in prevention["notes"])


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
    # What the row predicts for fix --apply (safe edits only) is what TensorFlow counts after it.
    assert _traces(plain) == row["traces_fixed"] <= 3


def test_verify_measures_the_program_without_prevention(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace.fix.applying.verify import verify
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
