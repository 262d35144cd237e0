"""Random plan edits in a session, through `tfretrace fix` (diff, then --apply): nothing outside the root is written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from sessions import storm
from tfretrace.cli import main
from tfretrace.fix.core.source import Replacement, Span
from tfretrace.fix.planning.plan import PlanStep
from tfretrace.records.session import Session

# Matrix rows leave it out (tools/matrix.py): plan edits from hand-made sessions: pure Python.
pytestmark = pytest.mark.single_env

TRAIN = (
    "import tensorflow as tf\n\n\n@tf.function  # step\ndef train_step(x, lr):\n    return x * lr\n\n\n"
    "out = train_step(x, lr)\nds = tf.data.Dataset.range(10).batch(4)\n"
)
VICTIM = TRAIN.replace("# step", "# someone else's")
KINDS = ["input-signature", "reduce-retracing", "element-spec", "tensor-argument", "cast-dtype", "zero-state",
         "drop-remainder", "statement", "advice", "keras-pad", "keras-pad-rows", "zz-unknown"]
PATHS = ["train.py", "link.py", "../outside/victim.py", "outside/victim.py", "OUTSIDE/victim.py", "sub/../train.py",
         "./train.py", "missing.py", "pipe.py", "", "tensorflow/x.py"]
TEXTS = st.one_of(
    st.sampled_from([
        "tf.function(reduce_retracing=True)",
        "tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.float32)])",
        "tf.constant(lr, dtype=tf.float32)", "tf.cast(lr, tf.float32)", "tf.zeros([2], dtype=tf.float32)",
        ", drop_remainder=True", "), print(1", "__import__('os').system('touch pwned')",
        "(" * 400 + ")" * 400, "x" + "+x" * 3000, "\u2028", "\x00", "tf.function(" * 30 + ")" * 30,
    ]),
    st.text(max_size=40),
)


def edits() -> st.SearchStrategy[Replacement]:
    position = st.integers(-1, 12)
    column = st.integers(-1, 60)
    return st.builds(
        lambda path, line, col, lines, end_col, text: Replacement(Span(path, line, col, line + lines, end_col), text),
        st.sampled_from(PATHS), position, column, st.integers(0, 2), column, TEXTS,
    )


def steps() -> st.SearchStrategy[dict[str, object]]:
    return st.builds(
        lambda kind, chosen, before, after: PlanStep("shape-changed", kind, "s", None, tuple(chosen), before,
                                                     after, 1.0).to_dict(),
        st.sampled_from(KINDS), st.lists(edits(), max_size=3), st.integers(1, 9), st.integers(0, 9),
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _world(top: Path) -> tuple[Path, dict[Path, bytes]]:
    """A program folder beside files that must never change, with a link and a FIFO leading to them."""
    root, outside = top / "root", top / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "sub").mkdir()
    (root / "train.py").write_text(TRAIN)
    (outside / "victim.py").write_text(VICTIM)
    (root / "link.py").symlink_to(outside / "victim.py")
    os.mkfifo(root / "pipe.py")
    protected = {outside / "victim.py": VICTIM.encode()}
    return root, protected


# Each example runs fix twice: bounded, and not shrunk (a failure prints its example as it is).
@settings(max_examples=60, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    plan=st.lists(steps(), min_size=1, max_size=3),
    session_root=st.sampled_from([None, "/", "..", "../outside", "/tmp"]),
    hashed=st.booleans(),
)
@example(
    plan=[PlanStep("shape-changed", "reduce-retracing", "s", None,
                   (Replacement(Span("outside/victim.py", 4, 1, 4, 12), "tf.function(reduce_retracing=True)"),),
                   9, 1, 1.0).to_dict()],
    session_root="..", hashed=True,
)
def test_random_plan_edits_never_write_outside_the_root_and_never_raise(
    plan: list[dict[str, object]], session_root: str | None, hashed: bool
) -> None:
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        root, protected = _world(top)
        outside_abs = str(top / "outside")
        for step in plan:
            for edit in step["edits"]:  # type: ignore[attr-defined]
                edit["path"] = edit["path"].replace("OUTSIDE", outside_abs)
        paths = {e["path"] for s in plan for e in s["edits"]}  # type: ignore[attr-defined]
        sources = {}
        for path in paths:
            disk = root / path if not os.path.isabs(path) else Path(path)
            # The attacker knows the victim's bytes: its hash is what a hostile session carries.
            try:
                sources[path] = _sha(disk.read_bytes()) if disk.is_file() else _sha(VICTIM.encode())
            except OSError:
                sources[path] = _sha(VICTIM.encode())
            if not hashed:
                sources[path] = "0" * 64
        report = replace(storm(), location="train.py:4", plan=tuple(plan))
        session = Session(functions=(report,), wall_seconds=1.0, root=session_root or str(root),
                          sources=tuple(sorted(sources.items())))
        saved = top / "run.json"  # written as is: a hostile session need not follow the schema
        saved.write_text(json.dumps(session.to_dict()))
        os.chdir(root)
        try:
            # --unsafe-fixes: every kind's edits are tried, not only the safe ones.
            for argv in (["fix", str(saved)], ["fix", str(saved), "--apply"],
                         ["fix", str(saved), "--apply", "--unsafe-fixes"]):
                err = io.StringIO()
                with redirect_stdout(io.StringIO()), redirect_stderr(err):
                    code = main(argv)
                assert code in (0, 2), err.getvalue()
                if code == 2:
                    assert err.getvalue().count("\n") == 1, err.getvalue()
                for path, data in protected.items():
                    assert path.read_bytes() == data
                written = {p for p in top.rglob("*") if p.is_file() and not p.is_symlink()}
                assert written <= {root / "train.py", top / "run.json", *protected}, written
        finally:
            os.chdir(here)


@pytest.mark.parametrize("session_root", ["/", ".."])
def test_the_example_attack_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_root: str) -> None:
    root, protected = _world(tmp_path)
    # Relative to the session's root, the path names the file outside the program.
    path = "outside/victim.py" if session_root == ".." else str(tmp_path / "outside" / "victim.py")
    edit = Replacement(Span(path, 4, 1, 4, 12), "tf.function(reduce_retracing=True)")
    plan = (PlanStep("shape-changed", "reduce-retracing", "s", None, (edit,), 9, 1, 1.0).to_dict(),)
    report = replace(storm(), location=f"{path}:4", plan=plan)
    session = Session(functions=(report,), wall_seconds=1.0, root=session_root,
                      sources=((path, _sha(VICTIM.encode())),))
    saved = session.save(tmp_path / "run.json")
    monkeypatch.chdir(root)
    assert main(["fix", str(saved), "--apply", "--unsafe-fixes"]) == 2
    assert all(p.read_bytes() == d for p, d in protected.items())
