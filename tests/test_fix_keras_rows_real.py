"""keras-pad-rows on real Keras: the live model asked, one line's models together, recorded lines only, no copy.

Issue 38 item 4 and issue 39 items 2, 7 and 10. Programs of tests/data/partial_batches are recorded
with ``tfretrace run --save``, fixed with ``tfretrace fix --apply`` and counted by TensorFlow's own
counter (``bench/tf_counts.py``): a subclassed model with a custom layer and a dict of two inputs is
padded once the live model showed its rows independent (``k_custom_rows``), as is a functional model of
a list of two inputs calling a subclassed model and a ``Lambda`` (``k_list_inputs``); a line where a plain model
and a batch-centring one both predict is not padded for either (``k_two_models``); another function's
``model.predict`` of another class is not touched (``k_same_name``). ``predict_full_batches`` itself
allocates no copy of the input beyond what ``predict`` does (a subprocess, measured by tracemalloc).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fix_safety_helpers import env, run
from test_fix_partial_batches_real import COUNTS, PREDICT, Recorded, _apply_count, _models, same_output

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _measured(folder: Path, program: str) -> int:
    """TensorFlow's count of Keras 3's predict function for ``program`` run (without tfretrace) in ``folder``."""
    done = run(folder, str(COUNTS), "counts.json", f"{program}.py")
    assert done.returncode == 0, done.stderr[-3000:]
    counts: dict[str, int] = json.loads((folder / "counts.json").read_text())
    return sum(n for name, n in counts.items() if name.endswith("." + PREDICT))


def _predict_steps(made: Recorded) -> list[dict[str, Any]]:
    return [s for f in made.session["functions"] for s in f["plan"] if s["kind"] == "keras-pad-rows"]


# k_custom_rows: a subclassed model with a custom layer, a dict of two inputs; k_list_inputs: a functional
# model of a list of two inputs calling a subclassed model (`body(a)`) and a Lambda; k_tensor_rows: a plain
# model predicting a float32 tensor (a tf.linspace grid), which the helper predicts as NumPy.
@pytest.mark.parametrize("program", ["k_custom_rows", "k_list_inputs", "k_tensor_rows"])
def test_a_model_with_custom_code_is_padded_once_the_live_model_shows_its_rows_independent(
    tmp_path: Path, program: str
) -> None:
    made = Recorded(tmp_path, program)
    assert made.after.returncode == 0, made.after.stderr[-3000:]
    step = made.step("keras-pad-rows")
    assert step["safety"] == "safe" and "unsafe_reason" not in step
    assert made.changed()
    before = _measured(made.original, program)
    after = made.measured(PREDICT)
    assert after == _apply_count(made.function()) < before == made.function()["traces"]
    assert made.after.stdout == made.before  # printed to 4 digits: the same bytes
    for args in (["1", "33", "95"], ["64", "31"]):
        original, edited = made.outputs(args)
        assert same_output(edited, original) and original.count(program) == len(args)


def test_a_line_where_a_row_mixing_model_also_predicts_is_padded_for_no_model(tmp_path: Path) -> None:
    made = Recorded(tmp_path / "safe", "k_two_models")
    steps = _predict_steps(made)
    # The plain model alone would be padded (its rows are independent); the line it shares is not.
    assert len(steps) == 2 and {s["safety"] for s in steps} == {"unsafe"}
    assert not made.changed()
    assert made.after.returncode == 0 and made.after.stdout == made.before
    # Why: padded, the line changes the centring model's predictions.
    forced = Recorded(tmp_path / "unsafe", "k_two_models", "--unsafe-fixes")
    assert forced.changed() and forced.after.returncode == 0
    assert forced.after.stdout != forced.before
    plain = [line for line in forced.after.stdout.splitlines() if " plain " in line]
    assert plain == [line for line in forced.before.splitlines() if " plain " in line]


def test_only_the_line_the_run_recorded_is_edited_not_a_predict_of_another_object_of_the_same_name(
    tmp_path: Path,
) -> None:
    made = Recorded(tmp_path, "k_same_name")
    assert made.step("keras-pad-rows")["safety"] == "safe"
    assert made.changed()
    source = (made.edited / "k_same_name.py").read_text()
    assert "model.predict(data[:7])" in source and source.count("predict_full_batches(model, data") == 1
    assert made.after.returncode == 0, made.after.stderr[-3000:]
    assert made.after.stdout == made.before and "k_same_name score" in made.before
    assert made.measured(PREDICT) == _apply_count(made.function()) < _measured(made.original, "k_same_name")
    # The session as saved applies again to the original; one that also rewrites the other object's call
    # (a line the run never recorded) is refused.
    shutil.copy(made.original / "k_same_name.py", made.edited / "k_same_name.py")
    assert run(made.edited, "-m", "tfretrace", "fix", "s.json", "--apply").returncode == 0
    shutil.copy(made.original / "k_same_name.py", made.edited / "k_same_name.py")
    session = json.loads((made.edited / "s.json").read_text())
    (saved,) = [s for f in session["functions"] for s in f["plan"] if s["kind"] == "keras-pad-rows"]
    original = (made.original / "k_same_name.py").read_text()
    line = next(i for i, text in enumerate(original.splitlines(), 1) if "model.predict(data[:7])" in text)
    col = original.splitlines()[line - 1].index("model.predict(data[:7])")
    end = col + len("model.predict(data[:7])")
    saved["edits"].append({"path": "k_same_name.py", "line": line, "col": col, "end_line": line, "end_col": end,
                           "text": "predict_full_batches(model, data[:7])"})
    (made.edited / "s.json").write_text(json.dumps(session))
    refused = run(made.edited, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert refused.returncode != 0
    assert (made.edited / "k_same_name.py").read_text() == original


# Input shapes (rows left out) for the models of test_fix_partial_batches_real._models.
_SHAPES = {"sequential": (6, 4), "recurrent": (5, 4), "wrapped-custom": (5, 4)}


def test_the_live_model_says_whether_padding_moves_a_kept_row() -> None:
    import numpy as np

    from tfretrace._tf.keras_live import check_rows, remember_predict
    from tfretrace._tf.keras_rows import ROWS_INDEPENDENT

    rng = np.random.default_rng(0)
    verdicts = {}
    for name, (model, _read) in _models().items():
        x = rng.normal(size=(45, *_SHAPES.get(name, (4,)))).astype("float32")
        model.predict(x, batch_size=16, verbose=0)
        remember_predict(model, {"x": x, "batch_size": 16, "steps": None})
        verdicts[name] = check_rows(model) == ROWS_INDEPENDENT
    # A Lambda and a subclassed model's own call compute each row alone: reading the layers could not
    # tell, running them can; so can a functional graph's BatchNormalization(training=True), which Keras 3's
    # predict runs in inference all the same. A layer that centres a batch or a mean over rows cannot.
    assert verdicts == {
        "sequential": True, "nested": True, "elementwise-op": True, "recurrent": True, "lambda": True,
        "subclassed": True, "custom-layer": False, "batch-statistics": True, "mean-over-rows": False,
        "wrapped-custom": False,
    }
    # A full last batch is left as it is by the edit: nothing to ask.
    model = _models()["custom-layer"][0]
    remember_predict(model, {"x": np.ones((32, 4), "float32"), "batch_size": 16, "steps": None})
    assert check_rows(model) is None
    # A float32 tensor is padded as the NumPy array it holds: its rows are kept and asked alike.
    model = _models()["nested"][0]
    remember_predict(model, {"x": tf.constant(rng.normal(size=(45, 4)), tf.float32), "batch_size": 16, "steps": None})
    assert check_rows(model) == ROWS_INDEPENDENT
    # A model also given a tensor of another dtype: the helper passes it to predict as it was, its partial
    # batch traces again.
    model = _models()["nested"][0]
    remember_predict(model, {"x": rng.normal(size=(45, 4)).astype("float32"), "batch_size": 16, "steps": None})
    remember_predict(model, {"x": tf.ones([45, 4], tf.float64), "batch_size": 16, "steps": None})
    assert check_rows(model) not in (None, ROWS_INDEPENDENT)


_MEMORY = """
import json, sys, tracemalloc
import keras, numpy as np
from tfretrace.fix.kinds.keras_pad_rows import HELPER
space = {}
exec(HELPER, space)
helper = space["predict_full_batches"]
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((2048,)), keras.layers.Dense(1)])
x = np.random.default_rng(0).random((20_007, 2048), dtype=np.float32)  # 164 MB, a partial last batch of 7
helper(model, x[:1500], batch_size=1000, verbose=0)  # traced and imported before measuring
peaks = []
calls = (lambda: model.predict(x, batch_size=1000, verbose=0), lambda: helper(model, x, batch_size=1000, verbose=0))
for call in calls:
    tracemalloc.start()
    got = call()
    peaks.append(tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
    peaks.append(got.tolist())
print(json.dumps({"input": x.nbytes, "predict": peaks[0], "helper": peaks[2], "same": peaks[1] == peaks[3]}))
"""


def test_predict_full_batches_pads_the_last_batch_without_copying_the_input(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _MEMORY], cwd=tmp_path, env=env(), capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["same"]  # every row predicted as predict itself does
    # predict may copy its input once; the helper adds no copy of it (only the last batch, padded: 8 MB).
    assert found["helper"] < found["predict"] + found["input"] // 8

