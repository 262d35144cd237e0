"""`tfretrace fix` on hand-built sessions: diff, all-or-nothing --apply, refusal of changed files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from sessions import storm
from tfretrace.cli import main
from tfretrace.fix.core.source import Replacement, Span
from tfretrace.fix.planning.plan import PlanStep
from tfretrace.records.session import Session

TRAIN = (
    "import tensorflow as tf\n\n\n@tf.function  # step\ndef train_step(x, lr):\n    return x * lr\n\n\n"
    "out = train_step(x, lr)\n"
)
DATA = "import tensorflow as tf\n\nds = tf.data.Dataset.range(10).batch(4)\n"


@pytest.fixture(autouse=True)
def _in_the_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fix` edits the program in the working directory (or --root), never where the session says."""
    monkeypatch.chdir(tmp_path)


def step(
    edits: tuple[Replacement, ...], *, before: int = 120, after: int = 1, kind: str = "reduce-retracing"
) -> dict[str, object]:
    return PlanStep("shape-changed", kind, "one signature", "@tf.function(...)", edits,
                    before, after, 1.5).to_dict()


def recorded(root: Path, steps: list[dict[str, object]], files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    hashes = tuple(sorted((n, hashlib.sha256(t.encode()).hexdigest()) for n, t in files.items()))
    report = replace(storm(), location="train.py:4", plan=tuple(steps))
    session = Session(functions=(report,), wall_seconds=10.0, root=str(root), sources=hashes)
    return session.save(root / "run.json")


SIGNATURE = Replacement(Span("train.py", 4, 1, 4, 12), "tf.function(reduce_retracing=True)")
CALL = Replacement(Span("train.py", 9, 20, 9, 22), "tf.constant(lr)")
BATCH = Replacement(Span("data.py", 3, 38, 3, 38), ", drop_remainder=True")


def test_shows_the_diff_and_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = recorded(tmp_path, [step((SIGNATURE,)), step((CALL,), kind="tensor-argument")], {"train.py": TRAIN})
    assert main(["fix", str(saved), "--unsafe-fixes"]) == 0
    out = capsys.readouterr().out
    assert "-@tf.function  # step" in out and "+@tf.function(reduce_retracing=True)  # step" in out
    assert "+out = train_step(x, tf.constant(lr))" in out
    assert f"tfretrace fix {saved} --apply --unsafe-fixes" in out
    assert (tmp_path / "train.py").read_text() == TRAIN


def test_apply_writes_every_file_and_then_refuses_the_changed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = recorded(tmp_path, [step((SIGNATURE,)), step((BATCH,), before=2, after=1, kind="drop-remainder")],
                     {"train.py": TRAIN, "data.py": DATA})
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    assert "@tf.function(reduce_retracing=True)  # step" in (tmp_path / "train.py").read_text()
    assert (tmp_path / "data.py").read_text().endswith(".batch(4, drop_remainder=True)\n")
    capsys.readouterr()
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "changed since the session was recorded" in err


def test_a_later_step_replaces_an_earlier_edit_of_the_same_place(tmp_path: Path) -> None:
    final = Replacement(SIGNATURE.span, "tf.function(input_signature=[tf.TensorSpec([None])])")
    saved = recorded(tmp_path, [step((SIGNATURE,), after=3), step((final,), before=3, kind="input-signature")],
                     {"train.py": TRAIN})
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    text = (tmp_path / "train.py").read_text()
    assert "input_signature" in text and "reduce_retracing" not in text


def test_one_bad_edit_writes_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = Replacement(Span("train.py", 9, 19, 9, 22), "tf.constant(lr)")  # not one whole expression
    saved = recorded(tmp_path, [step((BATCH,), kind="drop-remainder"), step((wrong,), kind="tensor-argument")],
                     {"train.py": TRAIN, "data.py": DATA})
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    assert "train.py:9" in capsys.readouterr().err
    assert (tmp_path / "data.py").read_text() == DATA and (tmp_path / "train.py").read_text() == TRAIN


def test_edits_into_library_code_or_unhashed_files_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keras_edit = Replacement(Span("keras/src/trainer.py", 1, 0, 1, 1), "x")
    saved = recorded(tmp_path, [step((keras_edit,))], {"train.py": TRAIN})
    assert main(["fix", str(saved), "--unsafe-fixes"]) == 2
    assert "outside the program" in capsys.readouterr().err
    saved = recorded(tmp_path, [step((SIGNATURE,))], {"train.py": TRAIN})
    session = Session(functions=(replace(storm(), plan=(step((SIGNATURE,)),)),), wall_seconds=1.0, root=str(tmp_path))
    session.save(saved)
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    assert "no hash" in capsys.readouterr().err
    assert (tmp_path / "train.py").read_text() == TRAIN


@pytest.mark.parametrize("target", ["/etc/tfretrace-victim.py", "../outside.py"])
def test_a_session_cannot_steer_edits_outside_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    root = tmp_path / "program"
    root.mkdir()
    victim = (root / target).resolve() if not target.startswith("/") else Path(target)
    hostile = Replacement(Span(target, 4, 1, 4, 12), "tf.function(reduce_retracing=True)")
    saved = recorded(root, [step((hostile,))], {"train.py": TRAIN})
    session = Session.from_dict({**json.loads(saved.read_text()), "sources": {target: "0" * 64}})
    session.save(saved)
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    assert "outside the program's folder" in capsys.readouterr().err
    assert not victim.exists() or victim.read_text() != TRAIN


def test_verify_needs_a_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = recorded(tmp_path, [step((SIGNATURE,))], {"train.py": TRAIN})
    assert main(["fix", str(saved), "--unsafe-fixes", "--verify"]) == 2
    assert "--verify needs the command" in capsys.readouterr().err


@pytest.mark.tf
def test_verify_then_apply_on_real_tensorflow(tmp_path: Path) -> None:
    """run -> fix --verify (a copy, measured) -> fix --apply (the program itself) on a real program."""
    import json
    import shutil
    import subprocess
    import sys

    examples = Path(__file__).resolve().parents[1] / "examples" / "wild"
    for name in ("partial_batch.py", "none_state.py"):
        shutil.copy(examples / name, tmp_path / name)
    program = tmp_path / "main.py"
    program.write_text("import partial_batch  # noqa: F401\nimport none_state  # noqa: F401\n")

    def tfretrace(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tfretrace", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=False)

    recorded = tfretrace("run", "--save", "s.json", "main.py")
    assert recorded.returncode == 0
    originals = {n: (tmp_path / n).read_text() for n in ("partial_batch.py", "none_state.py")}
    verified = tfretrace("fix", "s.json", "--unsafe-fixes", "--verify", "--", "python", "main.py")
    assert verified.returncode == 0, verified.stderr
    assert {n: (tmp_path / n).read_text() for n in originals} == originals  # --verify edits a copy only
    data = json.loads((tmp_path / "s.json").read_text())
    by_name = {f["name"]: f for f in data["functions"]}
    for name in ("train_step", "cell"):
        steps = [s for s in by_name[name]["plan"] if s["edits"]]
        assert by_name[name]["traces"] == 2
        assert steps[-1]["traces_after"] == steps[-1]["verified"] == 1
    applied = tfretrace("fix", "s.json", "--apply", "--unsafe-fixes")
    assert applied.returncode == 0, applied.stderr
    assert "drop_remainder" not in (tmp_path / "partial_batch.py").read_text()  # a signature keeps every example
    rerun = tfretrace("run", "--save", "after.json", "main.py")
    assert rerun.returncode == 0
    after = {f["name"]: f["traces"] for f in json.loads((tmp_path / "after.json").read_text())["functions"]}
    assert after["train_step"] == 1 and after["cell"] == 1
    # What the programs print: the zero state computes what None did; the signature keeps the
    # partial batch (4 steps an epoch, as before).
    lines = [line for line in recorded.stdout.splitlines() if line.startswith(("epoch", "["))]
    assert lines == ["epoch 0: 4 steps, mean 1.0000", "epoch 1: 4 steps, mean 1.0000", lines[2]]
    assert rerun.stdout.splitlines()[: len(lines)] == lines
