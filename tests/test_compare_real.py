"""tfretrace compare on real TensorFlow: a program and changed copies of it, and the run/pytest baselines."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfretrace  # noqa: E402
from tfretrace.compare.comparison import Comparison, compare, run_of  # noqa: E402
from tfretrace.records.function_key import EXACT  # noqa: E402
from tfretrace.records.session import Session  # noqa: E402

pytestmark = pytest.mark.tf

pytest_plugins = ["pytester"]

# The base program: lr is a tensor, every batch is full (the remainder is dropped).
PROGRAM = '''\
import numpy as np
import tensorflow as tf


@tf.function
def train_step(x, lr):
    return tf.reduce_sum(x) * lr


@tf.function
def evaluate(x):
    return tf.reduce_mean(x)


def batches(n, size):
    data = np.ones((n, 4), dtype="float32")
    for start in range(0, n - size + 1, size):
        yield data[start:start + size]


def main(samples=32):
    for epoch in range(3):
        for batch in batches(samples, 8):
            train_step(batch, tf.constant(float(epoch)))
        evaluate(np.ones((8, 4), dtype="float32"))


if __name__ == "__main__":
    main()
'''

# The changed copies a later commit could make.
PYTHON_INT = PROGRAM.replace("train_step(batch, tf.constant(float(epoch)))", "train_step(batch, epoch)")
PARTIAL_BATCH = PROGRAM.replace("range(0, n - size + 1, size)", "range(0, n, size)").replace(
    "def main(samples=32)", "def main(samples=36)")
MOVED = PROGRAM.replace("import tensorflow as tf\n", "import tensorflow as tf\n" + "# a new comment line\n" * 20)


def run(folder: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, Any]:
    """Run the program's main() from folder/train.py under the monitor; its session and module."""
    folder.mkdir()
    (folder / "train.py").write_text(text, encoding="utf-8")
    monkeypatch.chdir(folder)
    spec = importlib.util.spec_from_file_location(f"train_{folder.name}", folder / "train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tfretrace.watch(warn=False, log=False) as monitor:
        module.main()
    # Through JSON, as compare reads saved sessions.
    return Session.from_dict(json.loads(monitor.session().to_json())), module


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    session, module = run(tmp_path / "base", PROGRAM, monkeypatch)
    assert session.function("train_step").traces == module.train_step.experimental_get_tracing_count() == 1
    return session


def changed(base: Session, tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Comparison, Any]:
    head, module = run(tmp_path / "head", text, monkeypatch)
    # Measured: the head's count is TensorFlow's own.
    assert head.function("train_step").traces == module.train_step.experimental_get_tracing_count()
    return compare(run_of(base, "base"), run_of(head, "head")), module


def test_python_int_brought_back(base: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, module = changed(base, tmp_path, PYTHON_INT, monkeypatch)
    assert [d.name for d in result.worse] == ["train_step"]
    delta = result.worse[0]
    assert delta.how == EXACT and delta.traces == (1, 3) == (1, module.train_step.experimental_get_tracing_count())
    (cause,) = delta.new_causes
    assert (cause.cause, cause.added, cause.argument, cause.kind, cause.before, cause.after) == (
        "python-value-changed", 2, "lr", "python-value", "int 0", "1")
    line = PYTHON_INT.splitlines().index("            train_step(batch, epoch)") + 1
    assert cause.call_site == f"train.py:{line}"
    assert result.new == result.vanished == ()


def test_partial_batch_added(base: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = changed(base, tmp_path, PARTIAL_BATCH, monkeypatch)
    assert [d.name for d in result.worse] == ["train_step"]
    (cause,) = result.worse[0].new_causes
    assert (cause.cause, cause.argument, cause.kind, cause.before, cause.after) == (
        "shape-changed", "x", "shape", "(8, 4)", "(4, 4)")
    assert result.worse[0].retraces == (0, 1)


def test_function_moved_20_lines_down_is_matched_not_new(
    base: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = changed(base, tmp_path, MOVED, monkeypatch)
    delta = next(d for d in result.deltas if d.name == "train_step")
    assert delta.how == EXACT and delta.base is not None and delta.head is not None
    assert int(delta.head.location.split(":")[1]) - int(delta.base.location.split(":")[1]) == 20
    assert result.new == result.vanished == result.worse == ()
    assert {d.how for d in result.deltas} == {EXACT}


def _tfretrace(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "tfretrace", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300, check=False)


def test_run_with_a_baseline_fails_like_compare(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    saved = _tfretrace("run", "--save-baseline", "baseline.json", "--save", "base.json", "train.py", cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    baseline = json.loads((tmp_path / "baseline.json").read_text())
    assert [(f["qualname"], f["traces"], f["retraces"]) for f in baseline["functions"]] == [
        ("evaluate", 1, 0), ("train_step", 1, 0)]
    (tmp_path / "train.py").write_text(PYTHON_INT, encoding="utf-8")
    checked = _tfretrace("run", "--baseline", "baseline.json", "--save", "head.json", "train.py", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    assert "python-value-changed +2: lr: Python int 0 -> 1" in checked.stderr
    # The same verdict from the saved sessions, as markdown for a pull request.
    markdown = _tfretrace("compare", "base.json", "head.json", "--format", "markdown", cwd=tmp_path)
    assert markdown.returncode == 1
    assert "| `train_step` `train.py:5` | same | 1 → 3 (+2) | 0 → 2 (+2) |" in markdown.stdout
    missing = _tfretrace("run", "--baseline", "nothere.json", "train.py", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1


PYTEST_TESTS = '''\
import tensorflow as tf


@tf.function
def scale(x, factor):
    return x * factor


@tf.function
def shift(x):
    return x + 1


def test_scale():
    for epoch in range(3):
        scale(tf.ones([2]), tf.constant(float(epoch)))


def test_shift():
    for _ in range(3):
        shift(tf.ones([2]))
'''


@pytest.fixture
def recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A test file and its baseline, then the file with test_scale made worse (a Python float again)."""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyfile(test_model=PYTEST_TESTS)
    update = pytester.runpytest_subprocess("--tfretrace-baseline", "baseline.json", "--tfretrace-update-baseline",
                                           "-p", "no:randomly", "-p", "no:cacheprovider")
    update.assert_outcomes(passed=2)
    stored = json.loads((pytester.path / "baseline.json").read_text())
    assert sorted(stored["tests"]) == ["test_model.py::test_scale", "test_model.py::test_shift"]
    assert [(f["qualname"], f["retraces"]) for f in stored["tests"]["test_model.py::test_scale"]] == [("scale", 0)]
    pytester.makepyfile(test_model=PYTEST_TESTS.replace("tf.constant(float(epoch))", "float(epoch)"))
    return pytester


def _check_worse_test_fails(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "FAILED test_model.py::test_scale" in out
    failure = out.split("= FAILURES =", 1)[1]
    assert "scale (test_model.py:4): retraces 0 -> 2" in failure
    assert "python-value-changed +2: factor: Python float 0.0 -> 1.0" in failure


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_pytest_baseline_fails_only_the_worse_test(recorded: pytest.Pytester, workers: list[str]) -> None:
    if workers:
        import xdist  # noqa: F401  (dev extras: missing is a failure, never a skip)
    result = recorded.runpytest_subprocess(*workers, "--tfretrace-baseline", "baseline.json", "-p", "no:randomly",
                                           "-p", "no:cacheprovider")
    _check_worse_test_fails(result)


def test_pytest_baseline_failure_prints_an_update_command_that_runs_as_printed(recorded: pytest.Pytester) -> None:
    import shlex

    (recorded.path / "my baselines").mkdir()
    (recorded.path / "baseline.json").rename(recorded.path / "my baselines" / "b.json")
    checked = recorded.runpytest_subprocess("--tfretrace-baseline", "my baselines/b.json", "-p", "no:randomly",
                                            "-p", "no:cacheprovider")
    checked.assert_outcomes(passed=1, failed=1)
    hint = "If this is intended, record it: "
    (line,) = {text.split(hint, 1)[1] for text in checked.outlines if hint in text}
    command = shlex.split(line)
    assert command[0] == "pytest"
    updated = recorded.runpytest_subprocess(*command[1:], "-p", "no:cacheprovider")
    updated.assert_outcomes(passed=2)
    after = json.loads((recorded.path / "my baselines" / "b.json").read_text())
    assert [(f["qualname"], f["retraces"]) for f in after["tests"]["test_model.py::test_scale"]] == [("scale", 2)]


def test_pytest_update_baseline_under_xdist_records_the_new_counts(recorded: pytest.Pytester) -> None:
    import xdist  # noqa: F401

    before = (recorded.path / "baseline.json").read_text()
    result = recorded.runpytest_subprocess("-n", "2", "--tfretrace-baseline", "baseline.json",
                                           "--tfretrace-update-baseline", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    after = json.loads((recorded.path / "baseline.json").read_text())
    assert [(f["qualname"], f["retraces"], f["causes"]) for f in after["tests"]["test_model.py::test_scale"]] == [
        ("scale", 2, {"python-value-changed": 2})]
    assert after["tests"]["test_model.py::test_shift"] == json.loads(before)["tests"]["test_model.py::test_shift"]


ORDERED_TESTS = '''\
import tensorflow as tf


@tf.function
def step(x):
    return x * 2.0


def test_a():
    step(tf.zeros([1]))
    step(tf.zeros([2]))


def test_b():
    step(tf.zeros([1]))  # traced by test_a when it ran before
    step(tf.zeros([3]))


def test_c():
    step(tf.zeros([2]))  # only reuses test_a's trace when it ran before
'''


def test_pytest_baseline_counts_do_not_depend_on_the_tests_before(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's counts are as if TensorFlow's caches were empty at its start: the same whole,
    alone (-k), in reverse order and under xdist."""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyfile(test_order=ORDERED_TESTS)
    quiet = ("-p", "no:randomly", "-p", "no:cacheprovider")
    full = pytester.runpytest_subprocess("--tfretrace-baseline", "base.json", "--tfretrace-update-baseline", *quiet)
    full.assert_outcomes(passed=3)
    base = (pytester.path / "base.json").read_text()
    stored = json.loads(base)["tests"]
    assert {test.split("::")[1]: [(f["qualname"], f["traces"], f["retraces"]) for f in functions]
            for test, functions in stored.items()} == {
        "test_a": [("step", 2, 1)], "test_b": [("step", 2, 1)], "test_c": [("step", 1, 0)]}
    import xdist  # noqa: F401  (dev extras: missing is a failure, never a skip)
    for name, args in [
        ("reversed", ["test_order.py::test_c", "test_order.py::test_b", "test_order.py::test_a"]),
        ("alone", ["-k", "test_b"]),
        ("xdist", ["-n", "2"]),
    ]:
        (pytester.path / f"{name}.json").write_text(base)
        run = pytester.runpytest_subprocess(*args, "--tfretrace-baseline", f"{name}.json",
                                            "--tfretrace-update-baseline", *quiet)
        assert run.ret == 0, (name, run.stdout.str())
        assert (pytester.path / f"{name}.json").read_text() == base, name
    # Checked against the full run's baseline, a test that only reuses earlier traces passes alone.
    alone = pytester.runpytest_subprocess("-k", "test_c", "--tfretrace-baseline", "base.json", *quiet)
    alone.assert_outcomes(passed=1, deselected=2)
