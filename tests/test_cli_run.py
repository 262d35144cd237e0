"""Subprocess tests of ``tfretrace run`` with the real monitor and TensorFlow (kept few: ~4 s each)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tfretrace
from tfretrace.cli.invocation import python_command, tfretrace_command

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
    result = _tfretrace("run", "--fix-plan", "--save", str(saved), "--tensorboard", "logs", "train.py", "--flag",
                        "--exit", "3", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert json.loads(result.stdout.splitlines()[0]) == {
        "argv": ["train.py", "--flag", "--exit", "3"], "name": "__main__"}
    assert "tfretrace: 1 function, 4 traces (3 retraces)" in result.stderr
    # One line for the three retraces: the argument, its dimension and the sizes it took.
    assert "3x shape-changed  x dim 1: 3 -> 4 -> 5 -> 6" in result.stderr
    with pytest.MonkeyPatch.context() as mp:  # `tfretrace` where PATH finds this one, else how this one runs
        mp.chdir(tmp_path)
        tool, python = tfretrace_command(), python_command()
    assert f"Re-render: {tool} report {saved} -o report.html" in re.sub(r" \\\n *", " ", result.stderr)
    assert "\r" not in result.stderr and "\x1b" not in result.stderr  # piped: no live status line
    # --fix-plan: the checked step (the user's decorator, dim 1 open) in the grouped report, once;
    # the long plan is -v's; the commands that check and apply it close the report.
    report, plan = result.stderr.split("Re-render:", 1)
    assert "fix [safe] one input_signature: 4 -> 1 trace" in report
    assert "Fix plan:" not in result.stderr
    # The batch dimension (2 in every call) stays open: another data size must not break the program.
    # (Code wider than the terminal breaks inside its brackets: compared without the layout.)
    signature = "@tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])"
    assert "".join(signature.split()) in "".join(report.split())
    unfolded = re.sub(r" \\\n *", " ", plan)  # commands wider than the terminal continue with a backslash
    assert f"Apply: {tool} fix {saved} --apply" in unfolded
    assert f"Check: {tool} fix {saved} --verify -- {python} train.py --flag --exit 3" in unfolded
    # --tensorboard: each trace at the function's call count, read back with TensorBoard's reader.
    from test_tensorboard import read_back

    board = read_back(tmp_path / "logs")
    assert board["tfretrace/train_step/traces"] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert [step for step, _ in board["tfretrace/train_step/retrace"]] == [2, 3, 4]
    assert "tfretrace: wrote 4 traces to TensorBoard" in result.stderr
    step = json.loads(saved.read_text())["functions"][0]["plan"][0]
    assert (step["kind"], step["traces_before"], step["traces_after"]) == ("input-signature", 4, 1)
    session = tfretrace.load(saved)
    assert session.function("train_step").main_cause == "shape-changed"


def test_fix_plan_without_save_applies_the_kept_session(program: Path, tmp_path: Path) -> None:
    # -v: the long plan, printed once, after the per-trace report.
    result = _tfretrace("run", "--fix-plan", "-v", "train.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # The lines as words: where they wrap (or a command folds with a backslash) is the width's business.
    err = " ".join(result.stderr.split()).replace(" \\ ", " ")
    # The run kept its session: the commands name it, and nothing asks for a second run.
    assert "--save" not in err
    assert "Fix plan: 4 traces -> 1 with tfretrace fix --apply, " in err
    with pytest.MonkeyPatch.context() as mp:  # spelled as the program's folder sees it
        mp.chdir(tmp_path)
        tool = tfretrace_command()
    # `tfretrace fix` reads the kept session when none is named: the commands need not name it.
    assert err.endswith(f"Apply: {tool} fix --apply")
    assert f"Check: {tool} fix --verify -- " in err
    assert err.count("Fix plan:") == 1
    assert "(4 -> 1 trace, saves" in err  # "1 trace", not "1 traces"


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


HOSTILE_PROGRAM = """
import os, sys
import tensorflow as tf
import tfretrace

tfretrace.install()

@tf.function
def step(x):
    return x * 2

for n in (1, 2, 3):
    step(tf.zeros([n]))
own = tfretrace.stop()
print("own session:", own.function("step").traces)
os.chdir("elsewhere")

@tf.function
def late(x):
    return x + 1

def background():
    import time
    time.sleep(0.5)  # still tracing when the main code has already failed
    for n in (1, 2):
        late(tf.zeros([n]))

import threading
threading.Thread(target=background).start()

@tf.function
def broken(x):
    raise ValueError("bad trace")

broken(tf.zeros([1]))
"""


def test_run_survives_program_that_installs_stops_chdirs_and_fails_in_a_trace(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "prog.py").write_text(HOSTILE_PROGRAM, encoding="utf-8")
    result = _tfretrace("run", "--save", "s.json", "-o", "r.txt", "prog.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "own session: 3" in result.stdout
    err = result.stderr
    assert "ValueError: bad trace" in err and "stop() called without install()" not in err
    traceback_text = err[: err.index("ValueError: bad trace")]
    assert "runpy" not in traceback_text and f"{os.sep}tfretrace{os.sep}" not in traceback_text
    assert "prog.py" in traceback_text
    assert list((tmp_path / "elsewhere").iterdir()) == []
    session = tfretrace.load(tmp_path / "s.json")
    assert session.function("step").traces == 3
    # python waits for non-daemon threads before it exits; so does the monitor.
    assert session.function("late").traces == 2
    assert (tmp_path / "r.txt").read_text().startswith("tfretrace: ")


def test_live_status_on_a_terminal_only(program: Path, tmp_path: Path) -> None:
    import pty

    master, slave = pty.openpty()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", COLUMNS="120")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfretrace", "run", "train.py"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the pty's other end closed: the program ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=300) == 0
    err = b"".join(chunks).decode()
    assert "\rtfretrace: 1 function, 1 trace (0 retraces), last: train_step\x1b[K" in err
    report = err.index("tfretrace: 1 function, 4 traces (3 retraces)")
    assert err.rfind("\r\x1b[K", 0, report) > err.rfind("last: train_step")  # erased before the report


def test_run_a_notebook_traces_its_cells(tmp_path: Path) -> None:
    cells = ["import tensorflow as tf\n\n@tf.function\ndef step(x):\n    return x + 1\n",
             "for n in (1, 2, 3):\n    step(tf.zeros([n]))\nprint(int(step.experimental_get_tracing_count()))\n"]
    content = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                "source": text.splitlines(keepends=True)} for text in cells]
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": content, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    saved = tmp_path / "s.json"
    result = _tfretrace("run", "--save", str(saved), "nb.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    measured = int(result.stdout.split()[-1])  # TensorFlow's own count, printed by the notebook
    assert measured == 3
    assert tfretrace.load(saved).function("step").traces == measured


def test_the_projects_max_traces_is_a_budget_for_every_function(program: Path, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.tfretrace.run]\nmax-traces = 2\n", encoding="utf-8")
    result = _tfretrace("run", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "budget exceeded:" in result.stderr and "[tool.tfretrace.run] max-traces = 2" in result.stderr


# TensorFlow's documented switch to Keras 2 (the TF Agents tutorials' first lines): TensorFlow reads
# it when it loads, so the program must be the one that loads TensorFlow, as under python.
LEGACY_KERAS_PROGRAM = """
import os, sys
print("loaded before the program:", sorted(m for m in ("tensorflow", "keras", "tf_keras") if m in sys.modules))
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow as tf
print("legacy keras:", getattr(tf, "_tf_uses_legacy_keras", None))
try:
    from tensorflow.keras import layers
    print("tf.keras is", layers.Dense.__module__.split(".")[0])
except ImportError:
    print("tf.keras is missing")

@tf.function
def step(x):
    return x * 2.0

for n in (2, 3):
    step(tf.ones([n]))
"""


def test_run_lets_the_program_load_tensorflow_itself(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(LEGACY_KERAS_PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    plain = subprocess.run([sys.executable, "agent.py"], capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=300, check=False)
    assert plain.stdout.splitlines()[0] == "loaded before the program: []"
    for args in (("run",), ("run", "--fail-on-retrace", "--save", "s.json")):
        monitored = subprocess.run([sys.executable, "-m", "tfretrace", *args, "agent.py"], capture_output=True,
                                   text=True, cwd=tmp_path, env=env, timeout=300, check=False)
        assert monitored.stdout == plain.stdout, monitored.stderr
        # The hooks went in when the program imported TensorFlow: its retrace is still seen.
        assert monitored.returncode == (1 if "--fail-on-retrace" in args else 0), monitored.stderr
        assert "1 function, 2 traces (1 retrace)" in monitored.stderr


RELOADED_PROGRAM = """
import os, tempfile
import numpy as np
import keras  # imports TensorFlow halfway through its own import

x = np.ones((16, 4), "float32"); y = np.ones((16, 1), "float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1, verbose=0)
path = os.path.join(tempfile.mkdtemp(), "m.keras")
model.save(path)
first = keras.models.load_model(path)
first.fit(x, y, epochs=1, verbose=0)
second = keras.models.load_model(path)
second.fit(x, y, epochs=1, verbose=0)
"""


def test_fit_rows_of_a_trained_and_two_reloaded_models_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "reload.py").write_text(RELOADED_PROGRAM, encoding="utf-8")
    result = _tfretrace("run", "--save", "s.json", "reload.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    session = tfretrace.load(tmp_path / "s.json")
    assert "not observed" not in " ".join(session.notes)  # Keras was patched once loaded
    fits = [f for f in session.functions if f.keras is not None and f.keras.method == "fit"]
    # Each named by the line that built or loaded its model.
    assert sorted(f.location for f in fits) == ["reload.py:12", "reload.py:14", "reload.py:7"]
    assert all(f.keras is not None and f.keras.built_at == f.location for f in fits)


def test_a_plain_run_marks_what_tensorflow_was_not_asked_and_names_the_run_that_asks(
        program: Path, tmp_path: Path) -> None:
    # A plain run reruns none of the program's code, so TensorFlow checks no signature: the step
    # is "unchecked" (not "unsafe", as if TensorFlow had refused it), said once, and the next
    # command is the run that asks, not a --verify or --apply that could only skip the step.
    plain = _tfretrace("run", "train.py", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    kept = tmp_path / ".tfretrace" / "last-session.json"
    step = json.loads(kept.read_text())["functions"][0]["plan"][0]
    assert (step["kind"], step["safety"], step.get("unasked"), step.get("checked")) == (
        "input-signature", "unsafe", True, None)
    err = " ".join(plain.stderr.split()).replace(" \\ ", " ")
    assert "fix [unchecked] one input_signature: 4 -> 1 trace" in err and "[unsafe]" not in err
    assert err.count("unchecked: ") == 1  # the footer's one explanation
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        tool = tfretrace_command()
    assert err.endswith(f"Check: {tool} run --fix-plan train.py")  # no Apply: nothing safe to write
    # The run that asks: TensorFlow traced the open signature, the step is safe, and the stdout
    # digest a --verify compares against is kept with the session.
    asked = _tfretrace("run", "--fix-plan", "train.py", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    data = json.loads(kept.read_text())
    step = data["functions"][0]["plan"][0]
    assert (step["safety"], step.get("unasked"), step.get("checked")) == ("safe", None, "tensorflow")
    assert data["output"]["stdout"]["lines"] == 1
    err = " ".join(asked.stderr.split()).replace(" \\ ", " ")
    assert "fix [safe] one input_signature: 4 -> 1 trace" in err and "unchecked" not in err
    assert f"Apply: {tool} fix --apply" in err
