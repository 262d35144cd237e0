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

pytestmark = pytest.mark.tf
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


def record_apply_measure(folder: Path, script: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Record ``script``, apply its plan, and count the edited program's traces with TF's counter.

    Returns the recorded session (JSON) and TensorFlow's count per function after the fix.
    """
    done = _run(folder, "-m", "tfretrace", "run", "--save", "before.json", script)
    assert done.returncode == 0, done.stderr[-2000:]
    fixed = _run(folder, "-m", "tfretrace", "fix", "before.json", "--apply")
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    measured = _run(folder, str(COUNTS), "after_counts.json", script)
    assert measured.returncode == 0, measured.stderr[-2000:]
    session = json.loads((folder / "before.json").read_text())
    return session, json.loads((folder / "after_counts.json").read_text())


def apply_count(function: dict[str, Any]) -> int:
    """The plan's --apply count: the last step tfretrace makes, else the traces recorded."""
    changing = [
        s for s in function["plan"]
        if s.get("compiles_before") is None and s["traces_after"] < s["traces_before"]
    ]
    made = [s for s in changing if s.get("by") == "tfretrace"]
    return int(made[-1]["traces_after"]) if made else int(function["traces"])


def test_demo_applied_signature_survives_another_data_size(tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "demo_train.py", tmp_path / "demo_train.py")
    session, counts = record_apply_measure(tmp_path, "demo_train.py")
    rows = {f["name"]: f for f in session["functions"]}
    for name in ("train_step", "evaluate.<locals>.batch_error", "score"):
        # batch_error is moved out of evaluate() to module level: its qualname loses the prefix.
        measured = counts.get(name, counts.get(name.rsplit(".", 1)[-1]))
        assert measured == apply_count(rows[name]), name
    assert apply_count(rows["train_step"]) == 1
    assert apply_count(rows["evaluate.<locals>.batch_error"]) == 1
    # score(token_ids) took Python lists of 3 lengths and did tf.constant([token_ids]): now a tensor.
    assert apply_count(rows["score"]) == 1
    edited = (tmp_path / "demo_train.py").read_text()
    # The batch dimension was 8 in every call of this run: it stays open all the same.
    assert "tf.TensorSpec(shape=[None, None], dtype=tf.int32)" in edited
    assert "\ndef batch_error(tokens, y):" in edited  # moved to module level: one tf.function object
    steps = [s for s in rows["train_step"]["plan"] if s["kind"] == "input-signature"]
    assert "tokens dim 0" in steps[0]["pinned"]
    # 100 examples instead of 96: a partial last batch of 4 that the recorded run never had.
    (tmp_path / "demo_train.py").write_text(edited.replace("def make_dataset(n=96)", "def make_dataset(n=100)"))
    bigger = _run(tmp_path, "demo_train.py")
    assert bigger.returncode == 0, bigger.stderr[-2000:]
