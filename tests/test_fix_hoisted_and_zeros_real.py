"""Issue 38: TensorFlow asked about a nested def as hoist-def moves it, and about a None argument made zeros.

One program evaluates batches of four widths with a ``tf.function`` defined inside ``evaluate()``,
three times: ``batch_error`` closes over nothing (hoist-def moves it to module level, and its
later ``input_signature`` is asked of the def as hoisted, run beside the traces of every object the
outer def made), ``shifted`` closes over ``offset`` (not hoisted; its signature asked of each of the
three objects the recorded run kept alive, each beside its own traces). Another steps two
recurrent cells whose state is None first: ``cell``'s None branch starts from zeros, ``cell_ones``'s
from ones. Recorded with ``tfretrace run --save`` and fixed with ``--apply`` in a copy; TensorFlow's
own counter (``experimental_get_tracing_count()``, summed over the nested objects) gives the counts.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prog_runs import Ran, ran_program, recorded, saved_session
from prog_runs import run_in as _run

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

NESTED = """\
import tensorflow as tf

scale = tf.Variable(2.0)
traced = {"batch_error": 0, "shifted": 0}


def evaluate(batches):
    @tf.function
    def batch_error(x, y):
        return tf.reduce_sum(tf.abs(x * scale - y))

    start = batch_error.experimental_get_tracing_count()
    total = 0.0
    for x, y in batches:
        total += float(batch_error(x, y))
    traced["batch_error"] += batch_error.experimental_get_tracing_count() - start
    return total


def evaluate_shifted(batches, offset):
    @tf.function
    def shifted(x):
        return tf.reduce_sum(x + offset)

    out = [float(shifted(x)) for x, _ in batches]
    traced["shifted"] += shifted.experimental_get_tracing_count()
    return out


batches = [(tf.ones([2, n]) * 0.3, tf.fill([2, n], 0.7)) for n in (3, 4, 5, 6)]
for epoch in range(3):
    print("error", evaluate(batches))
    print("shifted", evaluate_shifted(batches, 1.0 + epoch))
for name, count in traced.items():
    print("traces", name, count)
"""

ZEROS = """\
import tensorflow as tf


@tf.function
def cell(x, state):
    if state is None:
        state = tf.zeros([2, 3])
    return tf.tanh(x * 0.5 + state)


@tf.function
def cell_ones(x, state):
    if state is None:
        state = tf.ones([2, 3])
    return tf.tanh(x * 0.5 + state)


state = None
other = None
for step in range(4):
    x = tf.fill([2, 3], 0.1 * (step + 1))
    state = cell(x, state)
    other = cell_ones(x, other)
print(state.numpy().tolist())
print(other.numpy().tolist())
print("traces", "cell", cell.experimental_get_tracing_count())
print("traces", "cell_ones", cell_ones.experimental_get_tracing_count())
"""

# A cell module stepped with state None, then its own state, and saved; the same program run with
# `reload` loads the SavedModel and steps the restored cell from None again, as a generator does.
SAVED = """\
import sys
import tempfile

import tensorflow as tf


class Cell(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.fill([3, 3], 0.2))

    @tf.function
    def step(self, x, state=None):
        if state is None:
            state = tf.zeros([2, 3])
        return tf.tanh(tf.matmul(x, self.w) + state)


cell = Cell()
state = None
for n in range(4):
    state = cell.step(tf.fill([2, 3], 0.1 * (n + 1)), state=state)
print(state.numpy().tolist())
folder = tempfile.mkdtemp()
tf.saved_model.save(cell, folder)
if sys.argv[1:] == ["reload"]:
    restored = tf.saved_model.load(folder)
    state = None
    for n in range(2):
        state = restored.step(tf.fill([2, 3], 0.1), state=state)
    print("restored", state.numpy().tolist())
print("traces", "step", cell.step.experimental_get_tracing_count())
"""


def _program(folder: Path, *args: str) -> Ran:
    return ran_program(folder, "prog.py", *args)


@dataclass(frozen=True)
class Recorded:
    folder: Path
    functions: dict[str, dict[str, Any]]
    before: Ran


def _record(folder: Path, program: str) -> Recorded:
    folder.mkdir()
    (folder / "prog.py").write_text(program)
    before = _program(folder)
    session = saved_session(folder)
    return Recorded(folder, {f["name"].rpartition(".")[2]: f for f in session["functions"]}, before)


def _applied(recorded: Recorded) -> Ran:
    copy = recorded.folder.parent / "applied"
    shutil.copytree(recorded.folder, copy)
    done = _run(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    return _program(copy)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory.mktemp("hoisted") / "recorded", NESTED)


@pytest.fixture(scope="module")
def zeros(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory.mktemp("zeros") / "recorded", ZEROS)


def _steps(function: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    return [(s["kind"], s.get("safety"), s.get("checked")) for s in function["plan"] if s.get("edits")]


def test_only_the_nested_def_that_closes_over_nothing_is_hoisted(nested: Recorded) -> None:
    # batch_error: hoisted, then its signature traced on the def as hoisted and run beside the
    # traces of the three objects evaluate() made. shifted closes over offset: neither.
    assert _steps(nested.functions["batch_error"]) == [
        ("hoist-def", "safe", None), ("input-signature", "safe", "tensorflow"),
    ]
    assert nested.functions["batch_error"]["fix_counts"]["apply"] == 1
    # shifted: each of the three objects (kept alive by the recorded run) asked with the signature.
    shifted = _steps(nested.functions["shifted"])
    assert shifted == [("input-signature", "safe", "tensorflow")]


def test_one_apply_hoists_the_nested_def_and_gives_it_its_signature(nested: Recorded) -> None:
    after = _applied(nested)
    assert nested.before.traces == {"batch_error": 12, "shifted": 12}
    assert after.traces == {"batch_error": 1, "shifted": 3}
    assert after.results == nested.before.results


def test_none_made_zeros_is_safe_only_where_tensorflow_ran_both_to_the_same_outputs(zeros: Recorded) -> None:
    steps = {name: _steps(zeros.functions[name]) for name in ("cell", "cell_ones")}
    # cell: the trace that got None run beside the trace with zeros, on 8 inputs (3 draws, 5 edge values).
    assert steps["cell"] == [("zero-state", "safe", "tensorflow")]
    (step,) = [s for s in zeros.functions["cell"]["plan"] if s.get("edits")]
    assert step["checked_inputs"] == 8
    # cell_ones starts from ones where it gets None: zeros compute otherwise, so it stays unsafe.
    assert steps["cell_ones"] == [("zero-state", "unsafe", None)]
    assert not [s for s in zeros.functions["cell_ones"]["plan"] if s.get("unasked")]


def test_apply_makes_only_the_zeros_tensorflow_checked(zeros: Recorded) -> None:
    after = _applied(zeros)
    assert zeros.before.traces == {"cell": 2, "cell_ones": 2}
    assert after.traces == {"cell": 1, "cell_ones": 2}
    assert after.results == zeros.before.results


def test_none_made_zeros_in_a_function_saved_and_reloaded_is_left_by_hand_and_every_apply_keeps_it_running(
    tmp_path: Path,
) -> None:
    # The restored step is called with state None: a SavedModel written from the calls as edited holds
    # no concrete function for None, and the restored call would fail. By hand, so no apply writes it.
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, SAVED, "reload")
    saver = functions["Cell.step"]
    (step,) = [s for s in saver["plan"] if s["kind"] == "zero-state"]
    assert step["safety"] == "advice" and not step.get("edits")
    for options in ((), ("--unsafe-fixes",)):
        done = _run(folder, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
        assert done.returncode == 0, done.stderr[-3000:]
        assert (folder / "prog.py").read_text() == SAVED
        assert ran_program(folder, "prog.py", "reload") == before


def test_none_made_zeros_in_a_saved_function_announces_the_saved_model_change(tmp_path: Path) -> None:
    recorded = _record(tmp_path / "recorded", SAVED)
    (step,) = [s for s in recorded.functions["step"]["plan"] if s["kind"] == "zero-state"]
    assert (step["safety"], step["changes"]) == ("safe", "saved-model-signature")
    after = _applied(recorded)
    assert recorded.before.traces["step"] > after.traces["step"]
    assert after.results == recorded.before.results


def test_a_saved_function_restored_and_called_in_another_file_keeps_its_none_calls(tmp_path: Path) -> None:
    # serve.py loads the SavedModel and calls the restored scale with None: linked by name across files,
    # the zero-state step of the saving function is by hand, and --apply leaves the program running.
    folder = tmp_path / "recorded"
    folder.mkdir()
    program = SAVED.replace("if sys.argv[1:] == [\"reload\"]:", "if True:").replace(
        "    restored = tf.saved_model.load(folder)\n", "    from serve import serve\n").replace(
        "    state = None\n    for n in range(2):\n        state = restored.step(tf.fill([2, 3], 0.1), state=state)\n"
        "    print(\"restored\", state.numpy().tolist())\n", "    print(\"restored\", serve(folder))\n")
    assert "from serve import serve" in program
    (folder / "serve.py").write_text(
        "import tensorflow as tf\n\n\ndef serve(folder):\n    restored = tf.saved_model.load(folder)\n"
        "    return restored.step(tf.fill([2, 3], 0.1), state=None).numpy().tolist()\n"
    )
    before, functions = recorded(folder, program)
    saver = functions["Cell.step"]
    (step,) = [s for s in saver["plan"] if s["kind"] == "zero-state"]
    assert step["safety"] == "advice" and not step.get("edits")
    done = _run(folder, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (folder / "prog.py").read_text() == program
    assert ran_program(folder) == before


# A train step defined inside run(), closing over nothing: each run passes a new model and optimizer, whose
# variables each new tf.function object creates at its first call.
PER_RUN = """\
import tensorflow as tf

x = tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]) / 8.0
y = tf.ones([4, 1])


def run(rate):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="ones")])
    opt = tf.keras.optimizers.SGD(rate)

    @tf.function
    def step(model, opt, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(3):
        loss = step(model, opt, x, y)
    return round(float(loss), 5)


for rate in (0.1, 0.2, 0.3):
    print("run", rate, run(rate))
"""


def test_a_nested_def_whose_objects_each_created_variables_is_not_hoisted_by_any_apply(tmp_path: Path) -> None:
    # One object at module level would have to create the second run's variables on a later trace, which
    # TensorFlow refuses (--apply wrote the hoist, and the program failed): by hand, saying so.
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, PER_RUN)
    function = functions["run.<locals>.step"]
    (hoist,) = [s for s in function["plan"] if s["kind"] == "hoist-def"]
    assert hoist["safety"] == "advice" and not hoist["edits"]
    for options in ((), ("--unsafe-fixes",)):
        done = _run(folder, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
        assert done.returncode == 0, done.stderr[-3000:]
        assert (folder / "prog.py").read_text() == PER_RUN
    assert ran_program(folder).results == before.results
