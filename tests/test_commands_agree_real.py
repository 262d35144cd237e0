"""Commands combined as a new user does (issue 41): run, --prevent, fix, --apply, compare agree on real TF."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

# A Python-float learning rate decayed per epoch, a partial last batch, and a tf.function made
# anew by a function called every epoch.
PROGRAM = '''\
import numpy as np
import tensorflow as tf

BASE_LR = 0.1
w = tf.Variable(tf.ones((3,)))


@tf.function
def train_step(x, lr):
    loss = tf.reduce_mean(tf.square(tf.linalg.matvec(x, w)))
    w.assign_sub(lr * tf.reduce_mean(x, axis=0))
    return loss


def run_epoch(data):
    @tf.function
    def score(x):
        return tf.reduce_sum(tf.linalg.matvec(x, w))

    total = 0.0
    for x in data:
        total += float(score(x))
    return total


ds = tf.data.Dataset.from_tensor_slices(np.arange(30, dtype=np.float32).reshape(10, 3) / 30).batch(4)
for epoch in range(3):
    lr = BASE_LR * 0.7 ** epoch
    for x in ds:
        loss = train_step(x, lr)
    print(epoch, round(float(loss), 5), round(run_epoch(ds), 5))
'''

ROOT = Path(__file__).resolve().parent.parent


def _tool(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", COLUMNS="200",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "tfretrace", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    if check:
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done


def _project(tmp: Path, name: str) -> Path:
    folder = tmp / name
    folder.mkdir()
    (folder / "train.py").write_text(PROGRAM, encoding="utf-8")
    return folder


def _functions(path: Path) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in json.loads(path.read_text(encoding="utf-8"))["functions"]}


def _plan(function: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The plan's fields that say what it does and predicts (seconds left out: they are timings)."""
    return [(s.get("kind"), s.get("cause"), s.get("traces_before"), s.get("traces_after"), s.get("safety"),
             s.get("by"), json.dumps(s.get("edits"), sort_keys=True)) for s in function.get("plan") or []]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("agree")
    plain = _project(tmp, "plain")
    _tool(plain, "run", "--save", "run.json", "train.py")
    prevented = _project(tmp, "prevented")
    # The first run records the profile; the second is prevented by it.
    _tool(prevented, "run", "--prevent", "profile.json", "train.py")
    _tool(prevented, "run", "--prevent", "profile.json", "--save", "run.json", "train.py")
    return {"plain": plain, "prevented": prevented}


def test_a_plan_is_the_same_whether_or_not_the_run_was_prevented(runs: dict[str, Path]) -> None:
    plain = _functions(runs["plain"] / "run.json")
    prevented_data = json.loads((runs["prevented"] / "run.json").read_text(encoding="utf-8"))
    prevented = {f["name"]: f for f in prevented_data["functions"]}
    step = prevented["train_step"]
    # Prevention did its work: TensorFlow's own count is below the count as written ...
    row = next(r for r in prevented_data["prevention"]["functions"] if r["name"] == "train_step")
    assert row["traces_with"] < row["traces_without"] == plain["train_step"]["traces"]
    # ... and the plan, its prediction and its safety are those of the run without prevention.
    assert _plan(step) == _plan(plain["train_step"]) and _plan(step)
    assert step["fix_counts"] == plain["train_step"]["fix_counts"]
    assert row["traces_fixed"] == plain["train_step"]["fix_counts"]["apply"] == 1
    # `fix` lists that plan (not "no plan") and its edit is made without --unsafe-fixes.
    fixed = _tool(runs["prevented"], "fix", "run.json")
    assert "train_step  train.py:8" in fixed.stdout
    assert "+@tf.function(input_signature=[" in fixed.stdout


def test_fix_prints_the_check_line_before_the_apply_line_and_it_runs(runs: dict[str, Path]) -> None:
    project = runs["plain"]
    out = _tool(project, "fix", "run.json").stdout.splitlines()
    checks = [line.removeprefix("Check: ") for line in out if line.startswith("Check: ")]
    applies = [i for i, line in enumerate(out) if line.startswith("Apply: ")]
    assert len(checks) == 1 and len(applies) == 1
    assert out.index("Check: " + checks[0]) < applies[0]
    words = shlex.split(checks[0])
    at = words.index("--verify")
    assert words[at - 2:at] == ["fix", "run.json"] and words[at + 1] == "--" and words[-1] == "train.py"
    # Following it verifies on a copy and leaves the program as it was.
    before = (project / "train.py").read_bytes()
    done = subprocess.run(checks[0], shell=True, cwd=project, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                                   PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"),
                                                                          os.environ.get("PYTHONPATH")) if p)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (project / "train.py").read_bytes() == before


def test_compare_matches_the_function_the_fix_moved_to_module_level(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    project = tmp_path / "applied"
    shutil.copytree(runs["plain"], project)
    _tool(project, "fix", "run.json", "--apply")
    edited = (project / "train.py").read_text(encoding="utf-8")
    # The def moved out: the outer body now opens with its first remaining statement, no blank line.
    assert "def run_epoch(data):\n    total = 0.0\n" in edited
    _tool(project, "run", "--save", "after.json", "train.py")
    after = _functions(project / "after.json")
    assert set(after) == {"train_step", "score"}
    done = _tool(project, "compare", "run.json", "after.json", "--format", "json", check=False)
    assert done.returncode == 0, done.stdout
    report = json.loads(done.stdout)
    (comparison,) = report["comparisons"]
    matched = {((f["base_key"] or {}).get("qualname"), f["key"]["qualname"]): f["match"]
               for f in comparison["functions"]}
    # train_step's decorator was edited (its input_signature); score was moved, not new and vanished.
    assert matched == {("train_step", "train_step"): "edited", ("run_epoch.<locals>.score", "score"): "hoisted"}
    assert report["worse"] == 0
    score = _functions(project / "run.json")["run_epoch.<locals>.score"]
    assert after["score"]["traces"] < score["traces"]
