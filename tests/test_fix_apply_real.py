"""`tfretrace fix --apply` on real TensorFlow: the count TensorFlow measures after applying equals the
plan's first (--apply) count, and the edited program still runs on other data sizes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Matrix rows leave it out (tools/matrix.py): the planner measured over 12 programs; per-version
# planning is in test_fix_real and test_fix_safety_real.
pytestmark = [pytest.mark.tf, pytest.mark.single_env]
pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "bench" / "tf_counts.py"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p)
    return env


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=folder, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )


def record_apply_measure(
    folder: Path, script: str, *options: str
) -> tuple[dict[str, Any], dict[str, int], str]:
    """Record ``script``, apply its plan (``options``: ``--unsafe-fixes``), count traces with TF's counter.

    Returns the recorded session (JSON), TensorFlow's count per function after the fix, and what the
    edited program printed in that counted run.
    """
    done = _run(folder, "-m", "tfretrace", "run", "--save", "before.json", script)
    assert done.returncode == 0, done.stderr[-2000:]
    fixed = _run(folder, "-m", "tfretrace", "fix", "before.json", "--apply", *options)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    measured = _run(folder, str(COUNTS), "after_counts.json", script)
    assert measured.returncode == 0, measured.stderr[-2000:]
    session = json.loads((folder / "before.json").read_text())
    return session, json.loads((folder / "after_counts.json").read_text()), measured.stdout


def apply_count(function: dict[str, Any], unsafe: bool = False) -> int:
    """The plan's --apply count (``unsafe``: with --unsafe-fixes), else the traces recorded."""
    from tfretrace.fix.planning.step import PlanStep, applied_count

    found = applied_count([PlanStep.from_dict(s) for s in function["plan"]], unsafe=unsafe)
    return int(function["traces"]) if found is None else found


def test_demo_applied_signature_survives_another_data_size(tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "demo_train.py", tmp_path / "demo_train.py")
    session, counts, _ = record_apply_measure(tmp_path, "demo_train.py", "--unsafe-fixes")
    rows = {f["name"]: f for f in session["functions"]}
    for name in ("train_step", "evaluate.<locals>.batch_error", "score"):
        # batch_error is moved out of evaluate() to module level: its qualname loses the prefix.
        measured = counts.get(name, counts.get(name.rsplit(".", 1)[-1]))
        assert measured == apply_count(rows[name], unsafe=True), name
    # train_step's signature is safe (TensorFlow traced it with every dimension open): --apply alone.
    assert apply_count(rows["train_step"]) == 1
    assert apply_count(rows["evaluate.<locals>.batch_error"], unsafe=True) == 1
    # score(token_ids) took Python lists of 3 lengths and did tf.constant([token_ids]): now a tensor.
    assert apply_count(rows["score"], unsafe=True) == 1
    edited = (tmp_path / "demo_train.py").read_text()
    # The batch dimension was 8 in every call of this run: it stays open all the same.
    assert "tf.TensorSpec(shape=[None, None], dtype=tf.int32)" in edited
    assert "\ndef batch_error(tokens, y):" in edited  # moved to module level: one tf.function object
    steps = [s for s in rows["train_step"]["plan"] if s["kind"] == "input-signature"]
    assert steps[0]["checked"] == "tensorflow"
    # 100 examples instead of 96 and other sentences: a partial last batch of 4 that the recorded run never had.
    bigger = _run(tmp_path, "demo_train.py", "--size", "100", "--seed", "3")
    assert bigger.returncode == 0, bigger.stderr[-2000:]


def _measured(counts: dict[str, int], function: dict[str, Any]) -> int:
    """TensorFlow's count for one recorded function, by qualname.

    A def moved to module level loses its ``outer.<locals>.`` prefix; a tf.data map function is
    counted under tf.data's own wrapper (every pipeline of the program together); a Keras row
    under its trainer's make_<method>_function.
    """
    name = function["name"]
    if function.get("keras"):
        method = function["keras"]["method"]
        return sum(n for q, n in counts.items() if f"make_{method}_function" in q)
    if name == "tf.vectorized_map":
        return sum(n for q, n in counts.items() if q.startswith("pfor."))  # pfor's function per eager call
    if name.endswith(" (restored by tf.saved_model.load)"):
        # Every restored function traces one body function of TensorFlow's (one restored row here).
        return counts.get("recreate_function.<locals>.restored_function_body", 0)
    if name.startswith("Dataset.map("):
        return sum(n for q, n in counts.items() if q.startswith("StructuredFunctionWrapper."))
    return counts.get(name, counts.get(name.rsplit(".", 1)[-1], 0))


def _output(stdout: str) -> str:
    # Lines where the program prints its own trace counts are meant to change.
    return "".join(line for line in stdout.splitlines(keepends=True) if "traces" not in line)


# Our own programs for the patterns of issue 18, each with tfretrace's edits only (nothing by hand).
APPLIED = ["wild/call_form.py", "wild/tensor_body.py", "wild/summary_step.py", "wild/two_dtypes.py",
           "wild/keras_predict.py", "new_function_object.py", "dataset_per_epoch.py", "vectorized_map_eager.py",
           "object_identity.py", "structure_changed.py", "saved_model_roundtrip.py", "wild/wrap_in_loop.py"]


@pytest.mark.parametrize("script", APPLIED)
def test_apply_alone_measures_what_the_plan_predicts(tmp_path: Path, script: str) -> None:
    folder = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", folder, ignore=shutil.ignore_patterns("__pycache__"))
    plain = _run(folder, str(COUNTS), "plain_counts.json", script)
    assert plain.returncode == 0, plain.stderr[-2000:]
    session, counts, edited_stdout = record_apply_measure(folder, script)
    rows = [f for f in session["functions"] if f["traces"] > 1 or any(s.get("by") for s in f["plan"])]
    assert rows
    maps = [f for f in session["functions"] if f["name"].startswith("Dataset.map(")]
    for function in rows:
        if function["name"].startswith("Dataset.map("):
            continue  # tf.data counts every pipeline together: checked below
        assert _measured(counts, function) == apply_count(function), function["name"]
    if maps:
        assert _measured(counts, maps[0]) == sum(apply_count(f) for f in maps)
    # The program prints what it printed before (the same values, now from fewer traces): the counted
    # run of the edited copy is the same program run as the plain one before it.
    assert _output(edited_stdout) == _output(plain.stdout)
