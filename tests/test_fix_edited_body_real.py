"""Issue 38: a step that edits the function's body is asked of TensorFlow with the body as the fix writes it.

One program holds five functions, each retracing on what it is passed: ``ramp(n)``, whose body
says ``tf.constant(n)`` (a tensor there needs ``tf.convert_to_tensor``); ``score(ids)``, a list of
ints of several lengths read by ``tf.constant([ids])`` (the list becomes one tensor, and a later
``input_signature`` opens its length); ``total(losses)``, lists of tensors of two lengths summed by
``tf.add_n`` (passed stacked, summed by ``tf.reduce_sum(losses, axis=0)``); ``offset(x)``, whose
edited body computes otherwise: Python's float64 arithmetic on ``x`` keeps a 1.0 that float32
tensor arithmetic loses; and ``clip_into(target, source)``, which only reads ``source``, a variable
of two trainable flags and once ``target`` itself. Recorded
with ``tfretrace run --save``, it is fixed with ``--apply`` in a copy and run again; TensorFlow's
own counter (``experimental_get_tracing_count()``) gives the counts.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prog_runs import Ran, edited_steps, ran_program, saved_session
from prog_runs import run_in as _run

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import tensorflow as tf


@tf.function
def ramp(n):
    count = tf.cast(tf.constant(n), tf.float32)
    return tf.reduce_sum(tf.ones([n])) / count


@tf.function
def score(ids):
    return tf.reduce_sum(tf.cast(tf.constant([ids]), tf.float32) * 0.5)


@tf.function
def total(losses):
    return tf.add_n(losses)


@tf.function
def clip_into(target, source):
    target.assign(tf.clip_by_value(source, -1.0, 1.0))
    return tf.reduce_sum(target)


@tf.function
def offset(x):
    return tf.constant(x) * 0.0 + (x * 1e9 + 1.0 - x * 1e9)


for n in range(2, 6):
    print("ramp", n, float(ramp(n)))
for ids in ([1, 2, 3], [4, 5], [6, 7, 8, 9]):
    print("score", ids, float(score(ids)))
a, b, c = (tf.constant(v) for v in (1.0, 2.0, 3.0))
print("total", float(total([a, b])))
print("total", float(total([a, b, c])))
kernel = tf.Variable([0.5, -2.0, 3.0])
shadow = tf.Variable(tf.zeros([3]))
moving = tf.Variable([-3.0, 0.25, 4.0], trainable=False)
print("clip", float(clip_into(shadow, kernel)))
print("clip", float(clip_into(shadow, moving)))  # a non-trainable source: another trace
print("clip", float(clip_into(kernel, kernel)))  # in place: both arguments are one variable
print("clip", kernel.numpy().tolist(), shadow.numpy().tolist())
for x in (0.5, 1.5, 2.5):
    print("offset", x, float(offset(x)))
for f in (ramp, score, total, clip_into, offset):
    print("traces", f.__name__, f.experimental_get_tracing_count())
"""

FUNCTIONS = ("ramp", "score", "total", "clip_into", "offset")


def _program(folder: Path, *args: str) -> Ran:
    return ran_program(folder, "prog.py", *args)


@dataclass(frozen=True)
class Recorded:
    folder: Path
    session: dict[str, Any]
    functions: dict[str, dict[str, Any]]
    before: Ran


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("edited") / "recorded"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM)
    before = _program(folder)
    session = saved_session(folder)
    return Recorded(folder, session, {f["name"]: f for f in session["functions"]}, before)


def _body_edit(step: dict[str, Any]) -> list[str]:
    # The body's own edit (line of the def's body) among the call-site edits.
    return [e["text"] for e in step["edits"] if "convert_to_tensor" in e["text"]]


def test_an_int_the_body_reads_by_tf_constant_is_safe_where_tensorflow_ran_the_edited_body(
    recorded: Recorded,
) -> None:
    steps = edited_steps(recorded.functions["ramp"])
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [("tensor-argument", "safe", "tensorflow")]
    # Four traces of the run, each run beside the edited body on 8 inputs (3 draws, 5 edge values).
    assert steps[0]["checked_inputs"] == 4 * 8
    assert _body_edit(steps[0]) == ["tf.convert_to_tensor(n)"]
    assert steps[0]["edits"][-1]["text"].endswith("dtype=tf.int64)")


def test_a_list_made_a_tensor_and_its_later_signature_are_asked_of_the_edited_body(recorded: Recorded) -> None:
    steps = edited_steps(recorded.functions["score"])
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
        ("tensor-argument", "safe", "tensorflow"), ("input-signature", "safe", "tensorflow"),
    ]
    assert steps[0]["checked_inputs"] == 3 * 8
    assert _body_edit(steps[0]) == ["tf.convert_to_tensor([ids])"]


def test_a_list_of_tensors_stacked_and_summed_by_reduce_sum_is_asked_of_the_edited_body(recorded: Recorded) -> None:
    steps = edited_steps(recorded.functions["total"])
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
        ("tensor-argument", "safe", "tensorflow"), ("input-signature", "safe", "tensorflow"),
    ]
    assert steps[0]["checked_inputs"] == 2 * 8
    assert "tf.reduce_sum(losses, axis=0)" in [e["text"] for e in steps[0]["edits"]]


def test_a_variable_the_body_only_reads_is_passed_as_a_tensor_where_tensorflow_ran_both(recorded: Recorded) -> None:
    # Each recorded trace (a trainable source, a non-trainable one, the two arguments one variable) is
    # run on new variables of its specs beside the trace with the source a tensor; outputs and the
    # variables' values after each run compared.
    steps = edited_steps(recorded.functions["clip_into"])
    assert [(s["kind"], s["cause"], s["safety"], s.get("checked")) for s in steps] == [
        ("tensor-argument", "variable-spec-changed", "safe", "tensorflow")
    ]
    assert steps[0]["checked_inputs"] == 3 * 8
    assert {e["text"] for e in steps[0]["edits"]} == {"tf.convert_to_tensor(kernel)", "tf.convert_to_tensor(moving)"}


def test_an_edited_body_that_computes_otherwise_stays_unsafe(recorded: Recorded) -> None:
    steps = edited_steps(recorded.functions["offset"])
    # TensorFlow traced the edited body (its outputs' structure is the run's), then ran it: it differs.
    assert [(s["kind"], s["safety"], s.get("checked")) for s in steps] == [
        ("tensor-argument", "unsafe", "tensorflow")
    ]
    assert recorded.functions["offset"]["fix_counts"]["apply"] == 3


def test_apply_reaches_one_trace_with_the_output_unchanged(recorded: Recorded) -> None:
    copy = recorded.folder.parent / "applied"
    shutil.copytree(recorded.folder, copy)
    done = _run(copy, "-m", "tfretrace", "fix", "s.json", "--apply")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (copy / "prog.py").read_text() != PROGRAM
    after = _program(copy)
    predicted = {name: recorded.functions[name]["fix_counts"]["apply"] for name in FUNCTIONS}
    assert recorded.before.traces == {"ramp": 4, "score": 3, "total": 2, "clip_into": 3, "offset": 3}
    assert predicted == {"ramp": 1, "score": 1, "total": 1, "clip_into": 1, "offset": 3}
    assert after.traces == predicted
    assert after.results == recorded.before.results


def test_the_edited_def_is_made_in_memory_against_the_live_globals_and_leaves_the_module_as_it_was(
    tmp_path: Path,
) -> None:
    import importlib.util

    import tensorflow as tf

    from tfretrace._tf.edited import rebuilt

    source = "import tensorflow as tf\n\nSCALE = 3.0\n\n\n@tf.function\ndef f(x):\n    return tf.add_n(x) * SCALE\n"
    path = tmp_path / "edited_module.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("edited_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before = dict(vars(module))
    made = rebuilt(module.f.python_function, source.replace("tf.add_n(x)", "tf.reduce_sum(x, axis=0)"), 7)
    assert made is not None
    assert vars(module) == before and path.read_text() == source  # nothing run in, or written to, the module
    stacked = tf.constant([1.0, 2.0])
    # Autograph converted the edited body (tf.add_n cannot iterate a symbolic tensor), with the module's globals.
    assert float(tf.function(made)(stacked)) == 9.0
    module.SCALE = 4.0
    assert float(tf.function(made)(stacked)) == 12.0
    assert rebuilt(module.f.python_function, source, 6) is None  # no def of that name at that line
