"""keras-call on real Keras: the live model runs predict and the call both ways; only equal arrays make it safe.

Issue 38 (item 4, for ``model.predict(x)`` made ``model(x, training=False).numpy()``). ``k_call_rows``
(a Sequential model predicted on a few rows whose count and length vary) is recorded with ``tfretrace
run --save``, fixed with ``tfretrace fix --apply`` and counted by TensorFlow's own counter
(``bench/tf_counts.py``): no predict function is traced, and the program prints the same bytes.
``k_call_unsafe``'s three models (an own ``predict_step``, two outputs, a layer that counts rows in a
variable) stay unsafe, each saying what differed; the check restores what a run changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fix_safety_helpers import run
from test_fix_keras_rows_real import _measured
from test_fix_partial_batches_real import PREDICT, PROGRAMS, Recorded, _apply_count
from tfretrace.fix.applying.apply import edits_by_file
from tfretrace.fix.core.source import SourceReader
from tfretrace.records.session import load

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
AGREED = ("same", "float-last-digits")


def test_a_sequential_model_predicted_on_a_few_rows_is_called_and_traces_no_predict_function(tmp_path: Path) -> None:
    made = Recorded(tmp_path, "k_call_rows")
    step = made.step("keras-call")
    assert step["safety"] == "safe" and "unsafe_reason" not in step
    # Both ran on the two kept inputs and on draws of each of the two recorded shapes, bit for bit alike.
    assert step["checked"] == "tensorflow" and step["checked_inputs"] >= 4 and step.get("changes") is None
    assert {e["keras"]["call"] for e in made.function()["events"]} == {"same"}
    # Each call ran the model's layers once more after the program: the session counts them.
    assert made.session["analysis"]["probe_traces"] >= step["checked_inputs"]
    assert made.changed() and "model(x, training=False).numpy()" in (made.edited / "k_call_rows.py").read_text()
    assert made.after.returncode == 0, made.after.stderr[-3000:]
    assert made.after.stdout == made.before and made.before.count("k_call_rows") == 3
    assert made.measured(PREDICT) == _apply_count(made.function()) == 0 < _measured(made.original, "k_call_rows")
    original, edited = made.outputs(["4", "9", "1"])
    assert edited == original and original.count("k_call_rows") == 3


def test_models_whose_call_is_not_their_predict_stay_unsafe_and_say_what_differed(tmp_path: Path) -> None:
    program = (PROGRAMS / "k_call_unsafe.py").read_text()
    (tmp_path / "k_call_unsafe.py").write_text(program)
    done = run(tmp_path, "-m", "tfretrace", "run", "--save", "s.json", "k_call_unsafe.py")
    assert done.returncode == 0, done.stderr[-3000:]
    fixed = run(tmp_path, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert (tmp_path / "k_call_unsafe.py").read_text() == program
    session = json.loads((tmp_path / "s.json").read_text())
    said = {}
    for function in session["functions"]:
        (step,) = [s for s in function["plan"] if s["kind"] == "keras-call"]
        verdicts = {e["keras"].get("call") for e in function["events"]}
        (verdict,) = verdicts
        assert verdict is not None and verdict not in AGREED
        # Asked and answered: unsafe with the model's answer, not the kind's default, and not checked.
        assert step["safety"] == "unsafe" and step["unsafe_reason"].endswith(verdict)
        assert "checked" not in step and "unasked" not in step
        said[function["keras"]["model_class"]] = verdict
    assert set(said) == {"Classifier", "Functional", "Sequential"}
    assert "Classifier.predict_step" in said["Classifier"]  # not run: predict runs its own step
    assert "list of 2" in said["Functional"]  # two outputs: a list, which has no .numpy()
    assert "counted/seen" in said["Sequential"]  # the variable a run updated
    # The program's own count of rows is what it printed: the check restored the variable after each run.
    assert "k_call_unsafe seen 5.0" in done.stdout


def test_the_check_restores_what_a_run_changed_and_never_runs_a_model_with_its_own_predict_step() -> None:
    import keras
    import numpy as np

    from tfretrace._tf.keras_call_check import check_call, models_run
    from tfretrace._tf.keras_live import kept_inputs

    class Counted(keras.layers.Layer):
        def build(self, shape: object) -> None:
            self.calls = 0

        def call(self, x: object) -> object:
            self.calls += 1  # a Python counter: a call bumps it where predict's trace did once
            return x * 2.0

    counting = keras.Sequential([keras.Input((4,)), Counted()])
    counting.predict(np.ones((3, 4), "float32"), verbose=0)
    layer = counting.layers[0]
    calls = layer.calls
    verdict, inputs = check_call(counting, [((3, 4), "float32")])
    assert verdict not in AGREED and inputs == 0 and ".calls" in verdict
    assert layer.calls == calls  # restored

    class Classifier(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(3)
            self.ran = 0

        def call(self, x: object) -> object:
            self.ran += 1
            return self.dense(x)

        def predict_step(self, data: object) -> object:
            return keras.ops.argmax(self(data, training=False), axis=-1)

    classifier = Classifier()
    classifier.predict(np.ones((2, 4), "float32"), verbose=0)
    ran, before = classifier.ran, models_run()
    verdict, inputs = check_call(classifier, [((2, 4), "float32")])
    assert "Classifier.predict_step" in verdict and inputs == 0
    assert classifier.ran == ran and models_run() == before  # not run at all

    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    plain.predict(np.ones((2, 4), "float32"), verbose=0)
    weights = [w.numpy().copy() for w in plain.weights]
    kept = len(kept_inputs(plain))  # rows a monitor an earlier test of this process installed kept
    verdict, inputs = check_call(plain, [((2, 4), "float32"), ((5, 4), "float32")])
    assert verdict in AGREED and inputs == 4 + kept  # two draws of each shape, and the rows kept
    assert models_run() >= before + 4
    assert all(np.array_equal(w.numpy(), kept) for w, kept in zip(plain.weights, weights, strict=True))


def test_two_string_models_scored_at_one_line_on_tensors_are_both_asked_and_called(tmp_path: Path) -> None:
    made = Recorded(tmp_path, "k_call_text_models")
    predicting = [f for f in made.session["functions"] if f["plan"]]
    assert len(predicting) == 2  # a row per model, both predicting at the helper's one line
    for function in predicting:
        # predict was given a string tensor: its rows are kept (as tensors) and the model asked both ways.
        assert {e["keras"]["call"] for e in function["events"]} == {"same"}
        (step,) = [s for s in function["plan"] if s["kind"] == "keras-call"]
        assert step["safety"] == "safe" and step["checked"] == "tensorflow" and step["checked_inputs"] >= 2
    edited = (made.edited / "k_call_text_models.py").read_text()
    assert edited.count("model(tf.constant(sentences), training=False).numpy()") == 1  # one edit serves both
    # ... and neither model's step is left to the user as clashing with the other's identical edit.
    _edits, advice = edits_by_file(load(made.edited / "s.json"), SourceReader(made.original))
    assert advice == []
    assert made.after.returncode == 0, made.after.stderr[-3000:]
    assert made.after.stdout == made.before and made.before.count("k_call_text") == 4
    assert made.measured(PREDICT) == 0 < _measured(made.original, "k_call_text_models")
    original, edited_out = made.outputs(["5"])
    assert edited_out == original and original.count("k_call_text") == 4


def test_a_plain_run_never_runs_the_model_again_and_leaves_the_step_unasked(tmp_path: Path) -> None:
    (tmp_path / "k_call_rows.py").write_text((PROGRAMS / "k_call_rows.py").read_text())
    done = run(tmp_path, "-m", "tfretrace", "run", "k_call_rows.py")
    assert done.returncode == 0, done.stderr[-3000:]
    session = json.loads((tmp_path / ".tfretrace" / "last-session.json").read_text())
    (function,) = [f for f in session["functions"] if f["plan"]]
    assert all("call" not in e["keras"] for e in function["events"])
    (step,) = [s for s in function["plan"] if s["kind"] == "keras-call"]
    assert step["safety"] == "unsafe" and step["unasked"] is True and "checked" not in step
    assert "analysis" not in session  # nothing ran after the program


def test_a_model_whose_predict_retraced_is_held_for_asking_only_while_small(monkeypatch: pytest.MonkeyPatch) -> None:
    # Built and dropped one after another, models predicting at one line would be gone when the run is
    # asked: a few small ones are held; a large one (a search over big models) never is.
    import gc
    import weakref

    import keras
    import numpy as np

    from tfretrace._tf import keras_live

    # From an empty hold, whatever earlier tests of this process held.
    monkeypatch.setattr(keras_live, "_held", [])
    monkeypatch.setattr(keras_live, "_held_weights", [0])
    def predicted(width: int) -> weakref.ref[Any]:
        model = keras.Sequential([keras.Input((width,)), keras.layers.Dense(width)])
        for rows in (1, 2):  # a second input shape: the predict function traces again
            keras_live.remember_predict(model, {"x": np.ones((rows, width), "float32"), "batch_size": None})
        return weakref.ref(model)

    small = predicted(8)  # 72 numbers
    assert keras_live._held_weights[0] == 72
    large = predicted(4000)  # 16 million: past the bound of weights, with 7 places left
    gc.collect()
    assert small() is not None and any(m is small() for m in keras_live._held)
    assert large() is None and len(keras_live._held) == 1 and keras_live._held_weights[0] == 72
