"""Who makes each plan step (tfretrace or a person), the headline's two counts, and --verify's rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sessions import keras_predict, session
from test_fix_plan import PARTIAL, report, t
from tfretrace.fix.plan import PlanStep, plan_for, predict_applied
from tfretrace.fix.source import SourceReader
from tfretrace.fix.step import applied_count, render_counts
from tfretrace.fix.verify import _compare


def _step(kind: str, before: int, after: int, edits: bool) -> PlanStep:
    from tfretrace.fix.source import Replacement, Span

    made = (Replacement(Span("a.py", 1, 0, 1, 1), "x"),) if edits else ()
    return PlanStep("shape-changed", kind, "s", None, made, before, after, 0.1)


def test_headline_gives_the_apply_count_then_the_steps_by_hand() -> None:
    steps = (_step("tensor-argument", 24, 8, True), _step("input-signature", 8, 3, True), _step("advice", 3, 1, False))
    assert [s.by for s in steps] == ["tfretrace", "tfretrace", "hand"]
    assert render_counts(steps) == "24 traces -> 3 with tfretrace fix --apply, -> 1 with step 3 by hand"
    assert applied_count(steps) == 3
    assert render_counts(steps[:2]) == "24 traces -> 3 with tfretrace fix --apply"
    # Nothing by tfretrace: --apply leaves the count as it is.
    assert applied_count(steps[2:]) == 3
    # A session saved before the order (a step by hand first): --apply's count is not knowable.
    old = (_step("advice", 24, 8, False), _step("input-signature", 8, 1, True))
    assert applied_count(old) is None and render_counts(old) == "24 traces -> 8 -> 1"


def test_by_is_saved_and_a_statement_has_none() -> None:
    step = _step("advice", 3, 1, False)
    assert step.to_dict()["by"] == "hand"
    note = replace(step, kind="statement")
    assert "by" not in note.to_dict() and note.by is None
    assert PlanStep.from_dict(_step("input-signature", 3, 1, True).to_dict()).by == "tfretrace"


def test_apply_prediction_is_the_first_count_and_never_counts_a_step_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    sigs, objects = [], []
    for obj in range(1, 6):
        sigs += [(t("x", 32, 10),), (t("x", 4, 10),)]
        objects += [obj, obj]
    rep = report(sigs, location=f"{path}:12", name="run.<locals>.inner", sites=[f"{path}:19"], objects=objects)
    steps = plan_for(rep, SourceReader())
    assert applied_count(steps) == predict_applied(rep, SourceReader()) == 5
    assert render_counts(steps).startswith("10 traces -> 5 with tfretrace fix --apply, -> 1 with step 2 by hand")


def test_verify_never_compares_one_keras_method_with_another(tmp_path: Path) -> None:
    predict = keras_predict()
    train = replace(predict, keras=replace(predict.keras, method="train"), traces=7)  # type: ignore[arg-type]
    after_predict = replace(predict, traces=1, plan=())
    after_train = replace(train, traces=7, plan=())
    outcomes = _compare(session(train, predict), session(after_train, after_predict), tmp_path)
    by_name = {o.name: o.traces_after for o in outcomes}
    assert by_name == {"encoder.train": 7, "encoder.predict": 1}


NEEDS_PYTHON = """import tensorflow as tf

NAMES = ["a", "b", "c", "d"]
table = {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0}


@tf.function
def pick(i):
    return tf.constant(NAMES[i])


@tf.function
def weight(i):
    return tf.constant(table[i])


@tf.function
def label(i):
    return tf.strings.join([f"class {i}"])


for i in range(3):
    pick(i)
    weight(i)
    label(i)
"""


def test_a_body_that_needs_the_python_value_keeps_it_and_says_so(tmp_path: Path) -> None:
    from test_fix_plan import py

    path = tmp_path / "needs.py"
    path.write_text(NEEDS_PYTHON)
    for line, name in ((7, "pick"), (12, "weight"), (17, "label")):
        rep = report([(py("i", n),) for n in range(3)], location=f"{path}:{line}", name=name, sites=[f"{path}:22"])
        steps = plan_for(rep, SourceReader())
        # Indexing a Python list or dict, or formatting a string: no edit, a statement says why.
        assert steps and {(s.kind, s.by, s.edits) for s in steps} == {("statement", None, ())}, name
