"""Issue 29 item 4 on real TensorFlow: a partial last batch in Keras predict and in a distributed dataset, --apply.

Each program of tests/data/partial_batches is recorded with ``tfretrace run --save``, fixed with
``tfretrace fix --apply`` (safe edits only) and run again under ``bench/tf_counts.py``, which counts
traces with TensorFlow's own counter. The safe programs (``k_partial``: a partial last batch, then
a few rows, then many; ``k_multi``: dict inputs, two outputs, ``batch_size=16``; ``d_spec``: a
MirroredStrategy step fed by a distributed dataset; ``d_pairs``: the same with (features, labels)
elements) must trace as the plan predicts, print what
they printed, and print what the original prints on other row counts (1, batch + 1, 3 x batch - 1).
The unsafe ones (``k_custom_layer``: a layer that centres each batch on its mean; ``d_static``: a
replica function reading its batch size as a number; ``d_two_datasets``: a step also fed by a
dataset of wider elements, which the first dataset's spec refuses) are left as they are by ``--apply``; with
``--unsafe-fixes`` they print something else or crash, which is why their steps are unsafe.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from fix_safety_helpers import ROOT, run

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
if tf.keras.Model.__module__.startswith("tf_keras") or tf.keras.Model.__module__.startswith("keras.src.engine"):
    # keras-pad-rows reads Keras 3's predict (Keras 2 predicts on a dataset whose batch is open).
    pytest.skip("the Keras programs are Keras 3 programs", allow_module_level=True)

PROGRAMS = Path(__file__).resolve().parent / "data" / "partial_batches"
COUNTS = ROOT / "bench" / "tf_counts.py"
PREDICT = "make_predict_function.<locals>.one_step_on_data_distributed"  # Keras 3's predict function

# program -> (its step kind, TensorFlow's qualname of the function, the other row counts, one run each)
SAFE: dict[str, tuple[str, str, list[list[str]]]] = {
    "k_partial": ("keras-pad-rows", PREDICT, [["1", "33", "95"]]),  # batch 32
    "k_multi": ("keras-pad-rows", PREDICT, [["1", "17", "47"]]),  # batch 16
    # A second line served only by the relaxed trace: padded too (the same module-level model).
    "k_two_lines": ("keras-pad-rows", PREDICT, [["40", "70"], ["5", "33"]]),
    "d_spec": ("element-spec", "step", [["1"], ["9"], ["23"]]),  # batches of 8
    # (features, labels) elements: the recorded leaves are pairs[0] and pairs[1] of one parameter.
    "d_pairs": ("element-spec", "step", [["1"], ["9"], ["23"]]),
}
# program -> (its step kind, the safe program of the same kind it differs from)
UNSAFE = {
    "k_custom_layer": ("keras-pad-rows", "k_partial"),
    "d_static": ("element-spec", "d_spec"),
    # The step is also fed by a second dataset of wider elements, which the first one's spec refuses.
    "d_two_datasets": ("element-spec", "d_spec"),
}


class Recorded:
    """One program recorded, its plan applied to a copy (``options``), the copy measured by TensorFlow's counter."""

    def __init__(self, folder: Path, program: str, *options: str) -> None:
        self.program = program
        self.original = folder / "original"
        self.edited = folder / "edited"
        for target in (self.original, self.edited):
            target.mkdir(parents=True)
            shutil.copy(PROGRAMS / f"{program}.py", target / f"{program}.py")
        done = run(self.edited, "-m", "tfretrace", "run", "--save", "s.json", f"{program}.py")
        assert done.returncode == 0, done.stderr[-3000:]
        self.before = done.stdout
        fixed = run(self.edited, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
        assert fixed.returncode == 0, fixed.stderr[-3000:]
        self.session: dict[str, Any] = json.loads((self.edited / "s.json").read_text())
        measured = run(self.edited, str(COUNTS), "counts.json", f"{program}.py")
        self.after = measured
        counts = self.edited / "counts.json"
        self.counts: dict[str, int] = json.loads(counts.read_text()) if counts.exists() else {}

    def function(self) -> dict[str, Any]:
        """The one function of the run with a plan."""
        (found,) = [f for f in self.session["functions"] if f["plan"]]
        return found

    def step(self, kind: str) -> dict[str, Any]:
        (found,) = [s for s in self.function()["plan"] if s["kind"] == kind]
        return found

    def measured(self, qualname: str) -> int:
        """TensorFlow's count for the function whose qualname is (or ends with) ``qualname``."""
        return sum(n for name, n in self.counts.items() if name == qualname or name.endswith("." + qualname))

    def changed(self) -> bool:
        return (self.edited / f"{self.program}.py").read_text() != (self.original / f"{self.program}.py").read_text()

    def outputs(self, args: list[str]) -> tuple[str, str]:
        """What the original and the edited program print with ``args``; both must run."""
        runs = [run(folder, f"{self.program}.py", *args) for folder in (self.original, self.edited)]
        for done in runs:
            assert done.returncode == 0, done.stderr[-3000:]
        return runs[0].stdout, runs[1].stdout


_NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")


def same_output(a: str, b: str) -> bool:
    """The same lines, numbers equal to float32 rounding (1e-6 relative).

    A row that was in a partial batch is computed in a full one after the edit: a batch of another
    size may take another kernel (a one-row batch: one float32 ulp apart, measured on CPU), as
    Keras' own predict does when its batch_size changes.
    """
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    x, y = [float(n) for n in _NUMBER.findall(a)], [float(n) for n in _NUMBER.findall(b)]
    return all(math.isclose(p, q, rel_tol=1e-6, abs_tol=1e-7) for p, q in zip(x, y, strict=True))


def _apply_count(function: dict[str, Any]) -> int:
    from tfretrace.fix.planning.step import PlanStep, applied_count

    found = applied_count([PlanStep.from_dict(s) for s in function["plan"]])
    return int(function["traces"]) if found is None else found


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Recorded]:
    """The safe programs, each recorded and applied once (the tamper test reuses k_partial's)."""
    return {}


def _safe(recorded: dict[str, Recorded], tmp_path_factory: pytest.TempPathFactory, program: str) -> Recorded:
    if program not in recorded:
        recorded[program] = Recorded(tmp_path_factory.mktemp(program), program)
    return recorded[program]


@pytest.mark.parametrize("program", sorted(SAFE))
def test_apply_fixes_the_partial_batch_and_the_program_computes_the_same(
    recorded: dict[str, Recorded], tmp_path_factory: pytest.TempPathFactory, program: str
) -> None:
    kind, qualname, others = SAFE[program]
    made = _safe(recorded, tmp_path_factory, program)
    assert made.after.returncode == 0, made.after.stderr[-3000:]
    function = made.function()
    step = made.step(kind)
    assert step["safety"] == "safe" and "unsafe_reason" not in step
    # Both kinds may move a float in its last digits (an open spec; a row once in a partial batch).
    assert step["changes"] == "float-last-digits"
    if kind == "element-spec":
        assert step["checked"] == "tensorflow"  # TensorFlow traced the step with the dataset's spec
    assert made.changed()
    # One trace above the minimum before; TensorFlow's own count after is the plan's --apply count.
    assert function["traces"] == 2
    assert made.measured(qualname) == _apply_count(function) == 1
    assert same_output(made.after.stdout, made.before)
    for args in others:
        original, edited = made.outputs(args)
        assert same_output(edited, original) and original.count(program) >= len(args)


@pytest.mark.parametrize("program", sorted(UNSAFE))
def test_apply_leaves_a_program_whose_rows_or_shapes_the_edit_would_change(
    recorded: dict[str, Recorded], tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, program: str
) -> None:
    kind, counterpart = UNSAFE[program]
    # The same kind is safe, and applied, where its condition holds (a model of Keras layers only;
    # a step TensorFlow traced with the dataset's spec): what tells the two programs apart is checked.
    assert _safe(recorded, tmp_path_factory, counterpart).step(kind)["safety"] == "safe"
    made = Recorded(tmp_path / "safe", program)
    step = made.step(kind)
    assert step["safety"] == "unsafe" and step["unsafe_reason"]
    assert "checked" not in step
    assert not made.changed()
    assert made.after.stdout == made.before
    # What makes it unsafe: written, the program prints something else (or crashes).
    forced = Recorded(tmp_path / "unsafe", program, "--unsafe-fixes")
    assert forced.changed()
    assert forced.after.returncode != 0 or forced.after.stdout != forced.before


def test_a_session_cannot_make_the_helper_or_the_call_say_something_else(
    recorded: dict[str, Recorded], tmp_path_factory: pytest.TempPathFactory
) -> None:
    made = _safe(recorded, tmp_path_factory, "k_partial")
    edited = made.edited / "k_partial.py"
    step = made.step("keras-pad-rows")
    for change in ("helper", "call"):
        shutil.copy(made.original / "k_partial.py", edited)
        session = json.loads((made.edited / "s.json").read_text())
        (saved,) = [s for f in session["functions"] for s in f["plan"] if s["kind"] == "keras-pad-rows"]
        assert len(saved["edits"]) == len(step["edits"]) == 2
        for edit in saved["edits"]:
            if change == "helper" and edit["text"].startswith("def "):
                edit["text"] = edit["text"].replace("extra = -min(rows) % size", "extra = 0; import os")
            if change == "call" and not edit["text"].startswith("def "):
                edit["text"] = edit["text"].replace("data[:n]", "data[:1]")
        (made.edited / "s.json").write_text(json.dumps(session))
        refused = run(made.edited, "-m", "tfretrace", "fix", "s.json", "--apply")
        assert refused.returncode != 0, change
        assert edited.read_text() == (made.original / "k_partial.py").read_text(), change


def _models() -> dict[str, tuple[Any, bool]]:
    """Models by name, each with whether its rows are independent in predict."""
    import keras

    class Centre(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            return x - keras.ops.mean(x, axis=0, keepdims=True)

    class Subclassed(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x: Any) -> Any:
            return self.dense(x)

    def functional(make: Any) -> Any:
        inputs = keras.Input((4,))
        return keras.Model(inputs, make(inputs))

    inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dropout(0.2)])
    return {
        "sequential": (keras.Sequential([
            keras.Input((6, 4)), keras.layers.Conv1D(2, 3), keras.layers.BatchNormalization(),
            keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1),
        ]), True),
        "nested": (functional(lambda x: keras.layers.Dense(2)(inner(x))), True),
        "elementwise-op": (functional(lambda x: keras.ops.exp(keras.layers.Dense(2)(x)) + 1.0), True),
        "recurrent": (keras.Sequential([keras.Input((5, 4)), keras.layers.Bidirectional(keras.layers.LSTM(2))]), True),
        "custom-layer": (keras.Sequential([keras.Input((4,)), Centre()]), False),
        "lambda": (keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda x: x * 2.0)]), False),
        "batch-statistics": (functional(lambda x: keras.layers.BatchNormalization()(x, training=True)), False),
        "mean-over-rows": (functional(lambda x: x - keras.ops.mean(x, axis=0, keepdims=True)), False),
        "subclassed": (Subclassed(), False),
        "wrapped-custom": (keras.Sequential([keras.Input((5, 4)), keras.layers.TimeDistributed(Centre())]), False),
    }


def test_a_model_s_rows_are_independent_only_where_every_layer_computes_each_row_alone() -> None:
    import numpy as np

    from tfretrace._tf.keras_rows import ROWS_INDEPENDENT, predict_rows

    x = {"x": np.ones((3, 4), "float32")}
    verdicts = {name: predict_rows(model, x) == ROWS_INDEPENDENT for name, (model, _rows) in _models().items()}
    assert verdicts == {name: rows for name, (_model, rows) in _models().items()}
    model = _models()["nested"][0]
    # Only NumPy arrays and float32 tensors with rows are padded: a tensor of another dtype, a list of numbers
    # or no rows go to predict as they were.
    assert predict_rows(model, {"x": {"a": np.ones((3, 4)), "b": np.ones((3, 2))}}) == ROWS_INDEPENDENT
    assert predict_rows(model, {"x": {"a": tf.ones([3, 4]), "b": np.ones((3, 2))}}) == ROWS_INDEPENDENT
    others = (tf.ones([3, 4], tf.float64), tf.constant(1.0), [[1.0] * 4] * 3, np.ones((0, 4)),
              [np.ones((3, 4)), np.ones((2, 4))], [tf.ones([3, 4]), tf.ones([2, 4])])
    for other in others:
        assert predict_rows(model, {"x": other}) != ROWS_INDEPENDENT


def test_a_module_level_model_named_as_another_model_s_parameter_is_not_padded_for_it(tmp_path: Path) -> None:
    # The encoder predicted through a helper whose parameter is called `model`, and its second call was
    # served by the relaxed trace; the module-level `model` centres each batch. Its line is not padded.
    made = Recorded(tmp_path, "k_pad_other_model")
    edited = (made.edited / "k_pad_other_model.py").read_text()
    assert "model.predict(small, verbose=0)" in edited
    assert made.after.returncode == 0, made.after.stderr[-3000:]
    assert same_output(made.after.stdout, made.before)
    assert made.after.stdout.splitlines()[-1] == made.before.splitlines()[-1]  # the centred rows, bit for bit
