"""Issue 38: hoist-def-outer on real TensorFlow: a def made anew by each call of its outer def, moved into main.

``score`` is defined inside ``evaluate()``, which ``main()`` calls every epoch; it reads ``main``'s
variable and scale. Moved into ``main`` it binds the same cells and one object serves every epoch:
TensorFlow, asked once the run is over, ran one fresh function of the first object beside every object's
trace. ``shifted`` reads ``offset``, which ``main`` rebinds every epoch: one object would keep the first
epoch's value (traced into its graph), and TensorFlow's run says so; it stays unsafe. Counts are
TensorFlow's own (``experimental_get_tracing_count()`` summed over the objects the program made).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from prog_runs import Ran, applied_copy, edited_steps, ran_program, recorded, run_in

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import numpy as np
import tensorflow as tf

seed = int(sys.argv[1]) if sys.argv[1:] else 0
made = {"score": [], "shifted": []}


def main():
    rng = np.random.default_rng(seed)
    w = tf.Variable(rng.normal(size=(3, 1)).astype("float32"))
    scale = 2.0
    offset = 0.0

    def evaluate(x):
        @tf.function
        def score(batch):
            return tf.reduce_sum(tf.matmul(batch, w)) * scale

        @tf.function
        def shifted(batch):
            return tf.reduce_sum(batch) + offset

        made["score"].append(score)
        made["shifted"].append(shifted)
        return float(score(x)), float(shifted(x))

    for epoch in range(4):
        w.assign_add(tf.fill([3, 1], 0.1))
        offset = float(epoch)
        x = tf.constant(rng.normal(size=(8, 3)).astype("float32"))
        print(epoch, *(v.hex() for v in evaluate(x)))


main()
for name, objects in made.items():
    unique = {id(f): f for f in objects}.values()
    print("traces", name, sum(f.experimental_get_tracing_count() for f in unique))
"""


@pytest.fixture(scope="module")
def outer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ran, dict[str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("outer") / "recorded"
    before, functions = recorded(folder, PROGRAM)
    return folder, before, {name.rpartition(".")[2]: f for name, f in functions.items()}


def test_the_def_over_mains_cells_is_moved_safely_and_the_rebound_one_is_not(
    outer: tuple[Path, Ran, dict[str, dict[str, Any]]],
) -> None:
    _folder, before, functions = outer
    assert before.traces == {"score": 4, "shifted": 4}
    assert [(s["kind"], s["safety"], s.get("checked")) for s in edited_steps(functions["score"])] == [
        ("hoist-def-outer", "safe", "tensorflow")
    ]
    assert functions["score"]["fix_counts"]["apply"] == 1
    shifted = [(s["kind"], s["safety"]) for s in edited_steps(functions["shifted"])]
    assert shifted == [("hoist-def-outer", "unsafe")]


def test_apply_moves_it_into_main_and_tensorflow_counts_one_trace(
    outer: tuple[Path, Ran, dict[str, dict[str, Any]]],
) -> None:
    folder, before, _functions = outer
    copy = applied_copy(folder)
    after = ran_program(copy)
    assert after.traces == {"score": 1, "shifted": 4}
    assert after.results == before.results
    main = next(n for n in ast.parse((copy / "prog.py").read_text()).body if isinstance(n, ast.FunctionDef))
    assert [n.name for n in main.body if isinstance(n, ast.FunctionDef)] == ["score", "evaluate"]
    other_before, other_after = ran_program(folder, "prog.py", "5"), ran_program(copy, "prog.py", "5")
    assert other_after.results == other_before.results
    assert other_after.traces == {"score": 1, "shifted": 4}


SIZES = """\
import tensorflow as tf

made = []


def main():
    w = tf.Variable(2.0)

    def evaluate(x):
        @tf.function
        def score(batch):
            return tf.reduce_sum(batch * w)

        made.append(score)
        return float(score(x))

    for n in (2, 3, 4, 5):
        print(evaluate(tf.ones([n])))


main()
print("traces", "score", sum(f.experimental_get_tracing_count() for f in {id(f): f for f in made}.values()))
"""


def test_a_signature_after_the_move_lands_on_the_moved_def_and_never_moves_it_alone(tmp_path: Path) -> None:
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, SIZES)
    (function,) = functions.values()
    kinds = [(s["kind"], s["safety"]) for s in edited_steps(function)]
    assert kinds == [("hoist-def-outer", "safe"), ("input-signature", "safe")]
    # A saved session without the move's own step: the signature's edits carry the move, refused whole.
    session = json.loads((folder / "s.json").read_text())
    session["functions"][0]["plan"] = [s for s in session["functions"][0]["plan"] if s["kind"] != "hoist-def-outer"]
    hostile = tmp_path / "hostile"
    shutil.copytree(folder, hostile)
    (hostile / "s.json").write_text(json.dumps(session))
    done = run_in(hostile, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode != 0
    assert (hostile / "prog.py").read_text() == SIZES
    after = ran_program(applied_copy(folder))
    assert before.traces == {"score": 4} and after.traces == {"score": 1}
    assert after.results == before.results
