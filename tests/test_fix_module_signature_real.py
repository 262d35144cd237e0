"""tf.Module methods get the input_signature their plan offers, on real TensorFlow (issue 33 item 4a).

Each program in tests/data/module_signature runs under plain python (TensorFlow's own trace
counts, printed on stderr from ``experimental_get_tracing_count()``), is recorded with
``tfretrace run``, fixed with ``tfretrace fix --apply`` (``--unsafe-fixes`` where its step is
unsafe) and run again: the count TensorFlow measures after the edit is the plan's prediction,
and the program prints what it printed.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fix_safety_helpers import run

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

DATA = Path(__file__).resolve().parent / "data" / "module_signature"


@dataclass
class Fixed:
    """One program: its plain run, its recorded plan, and the run after the fix."""

    before: str  # stdout under plain python
    counts_before: list[int]  # TensorFlow's own trace counts under plain python
    session: dict[str, Any]
    original: str
    edited: str
    after: str
    counts_after: list[int]

    def function(self, name: str) -> dict[str, Any]:
        found = [f for f in self.session["functions"] if f["name"] == name]
        assert len(found) == 1, [f["name"] for f in self.session["functions"]]
        return found[0]


def _counts(stderr: str, prefix: str) -> list[int]:
    lines = [line for line in stderr.splitlines() if line.startswith(f"{prefix} traces ")]
    assert len(lines) == 1, stderr[-3000:]
    return [int(n) for n in lines[0].split()[2:]]


def _plain(folder: Path, program: str, prefix: str) -> tuple[str, list[int]]:
    done = run(folder, program)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, _counts(done.stderr, prefix)


def _recorded(tmp: Path, program: str) -> Path:
    folder = tmp / "recorded"
    folder.mkdir()
    shutil.copy(DATA / program, folder / program)
    done = run(folder, "-m", "tfretrace", "run", "--save", "s.json", program)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def _fixed(recorded: Path, into: Path, program: str, prefix: str, *options: str) -> Fixed:
    # Each fix on its own copy of the recorded folder: the session's paths are relative to it.
    shutil.copytree(recorded, into)
    before, counts_before = _plain(into, program, prefix)
    original = (into / program).read_text()
    done = run(into, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
    assert done.returncode == 0, done.stderr[-3000:]
    after, counts_after = _plain(into, program, prefix)
    session = json.loads((into / "s.json").read_text())
    return Fixed(before, counts_before, session, original, (into / program).read_text(), after, counts_after)


@pytest.fixture(scope="module")
def mlp_recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _recorded(tmp_path_factory.mktemp("mlp"), "mlp_core.py")


@pytest.fixture(scope="module")
def mlp_applied(mlp_recorded: Path) -> Fixed:
    return _fixed(mlp_recorded, mlp_recorded.parent / "apply", "mlp_core.py", "mlp")


@pytest.fixture(scope="module")
def mlp_unsafe(mlp_recorded: Path) -> Fixed:
    return _fixed(mlp_recorded, mlp_recorded.parent / "unsafe", "mlp_core.py", "mlp", "--unsafe-fixes")


def _signature_step(function: dict[str, Any]) -> dict[str, Any]:
    steps = [s for s in function["plan"] if s["kind"] == "input-signature"]
    assert len(steps) == 1, [s["kind"] for s in function["plan"]]
    return steps[0]


def test_the_mlp_plan_offers_the_signature_not_reduce_retracing(mlp_applied: Fixed) -> None:
    # `MLP.__call__(self, x, preds=False)`, preds never passed, layers built on the first call:
    # TensorFlow traced 9 times (first call, its variable re-trace, two partial batches, the
    # save's (None, 20) and its re-traces); reduce_retracing leaves 6, the signature 3.
    assert mlp_applied.counts_before == [9]
    function = mlp_applied.function("MLP.__call__")
    assert function["traces"] == 9
    assert "reduce-retracing" not in [s["kind"] for s in function["plan"]]
    step = _signature_step(function)
    assert (step["traces_before"], step["traces_after"]) == (9, 3)
    # The first call made the layers' variables: TensorFlow cannot trace that call again after
    # the run, so the step is unsafe, says why, and keeps the size every call had (an open
    # feature size fails at the layer's `x.shape[1]`).
    assert step["safety"] == "unsafe" and step["unsafe_reason"]
    assert "checked" not in step
    assert function["fix_counts"] == {"apply": 9, "unsafe_fixes": 3}


def test_apply_leaves_the_mlp_as_it_was(mlp_applied: Fixed) -> None:
    assert mlp_applied.edited == mlp_applied.original
    assert mlp_applied.counts_after == [9]
    assert mlp_applied.after == mlp_applied.before


def test_unsafe_fixes_give_the_predicted_count_and_the_same_output(mlp_unsafe: Fixed) -> None:
    assert mlp_unsafe.edited != mlp_unsafe.original
    # preds stays out of the signature: TensorFlow binds its default False as a constant.
    assert "@tf.function(input_signature=[tf.TensorSpec(shape=[None, 20], dtype=tf.float32)])" in mlp_unsafe.edited
    predicted = mlp_unsafe.function("MLP.__call__")["fix_counts"]["unsafe_fixes"]
    assert mlp_unsafe.counts_after == [predicted] == [3]
    assert mlp_unsafe.after == mlp_unsafe.before


@pytest.fixture(scope="module")
def methods(tmp_path_factory: pytest.TempPathFactory) -> Fixed:
    recorded = _recorded(tmp_path_factory.mktemp("methods"), "module_methods.py")
    return _fixed(recorded, recorded.parent / "apply", "module_methods.py", "methods")


def test_tensorflow_checks_a_methods_signature_and_apply_writes_it(methods: Fixed) -> None:
    # A decorated __call__ (two instances, one called inside the other's step) and
    # `self.step = tf.function(self._step)`: the probe traces each live instance's method with
    # every dimension open, so both steps are safe and `--apply` writes them.
    assert methods.counts_before == [3, 3, 3]  # scale, trainer.step, trainer.model
    call = methods.function("Scale.__call__")
    step = methods.function("Trainer._step")
    for function in (call, step):
        found = _signature_step(function)
        assert (found["safety"], found.get("checked")) == ("safe", "tensorflow")
    assert "input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)]" in methods.edited
    assert "tf.function(self._step, input_signature=[" in methods.edited
    scale, trainer_step, model = methods.counts_after
    assert scale + model == call["fix_counts"]["apply"] == 2  # one trace per Scale object
    assert trainer_step == step["fix_counts"]["apply"] == 1
    assert methods.after == methods.before
