"""Every fix kind on real TensorFlow: the plan's predicted count equals the count measured after applying it."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")
if tf.keras.Model.__module__.startswith("tf_keras") or tf.keras.Model.__module__.startswith("keras.src.engine"):
    # The scenario programs (examples/wild, tests/fix_scenarios.py) are Keras 3 programs: under
    # Keras 2 several do not run at all (a GRU's state API, for one). The Keras 2 rows of
    # make test-matrix cover Keras 2 through tests/test_keras.py and tests/test_real_reports.py.
    pytest.skip("fix scenarios are Keras 3 programs; tf.keras is Keras 2 here", allow_module_level=True)

RUNNER = Path(__file__).with_name("fix_scenarios.py")

# scenario -> (traces recorded, the plan's step kinds in order, the predicted final count)
EXPECTED: dict[str, tuple[int, list[str], int]] = {
    "widening_shapes": (5, ["input-signature"], 1),
    "reduce_retracing": (6, ["reduce-retracing"], 2),  # a str argument: no input_signature can be written
    "python_lr": (5, ["tensor-argument"], 1),
    "class_index": (7, ["tensor-argument"], 1),
    "dtype_cast": (2, ["cast-dtype"], 1),
    "none_state": (2, ["zero-state"], 1),
    "partial_batch": (2, ["input-signature"], 1),  # every example kept: no drop_remainder
    "def_in_method": (10, ["input-signature", "advice"], 1),  # tfretrace's edit first, then by hand
    "per_replica": (2, ["element-spec"], 1),
    "per_replica_generator": (2, ["element-spec"], 1),  # the edit is made (not advice): measured 1
    "new_config_object": (4, ["advice"], 1),
    "read_only_variable": (3, ["tensor-argument"], 1),  # the call that hit is edited too
    "list_of_tensors": (3, ["tensor-argument", "input-signature"], 1),
    "tutorial_loop": (3, ["input-signature"], 2),  # first + optimizer variable creation remain
    "train_and_validation": (3, ["input-signature"], 2),
    "rnn_generate": (2, ["zero-state", "input-signature"], 1),
    "variable_lists": (2, ["statement"], 2),
    "keras_predict": (2, ["keras-call"], 0),  # no predict function is traced at all
    "keras_predict_pad": (2, ["keras-pad"], 1),
    "export_wrapper": (8, ["input-signature"], 2),  # the save's traces follow the signature
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # One process for every scenario: TensorFlow loads once, and two logical CPUs can be set up
    # before anything else touches the devices.
    out = tmp_path_factory.mktemp("fix-scenarios")
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(out)], capture_output=True, text=True, timeout=600, env=os.environ.copy()
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    return data


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_predicted_count_is_the_measured_count(results: dict[str, Any], scenario: str) -> None:
    traces, kinds, final = EXPECTED[scenario]
    found = results[scenario]
    plan = found["plan"]
    assert found["traces"] == traces
    assert [step["kind"] for step in plan] == kinds
    changing = [s for s in plan if s["traces_after"] < s["traces_before"]]
    predicted = changing[-1]["traces_after"] if changing else traces
    assert predicted == final
    # The program with the plan applied (its edits, or the advice done by hand) traces exactly as predicted.
    assert found["measured"] == predicted
    compile(found["edited"], "prog.py", "exec")


def test_steps_chain_and_save_time(results: dict[str, Any]) -> None:
    for scenario, found in results.items():
        plan = [s for s in found["plan"] if s["kind"] != "statement"]
        for earlier, later in itertools.pairwise(plan):
            assert later["traces_before"] == earlier["traces_after"], scenario
        for step, following in itertools.zip_longest(plan, plan[1:]):
            if step["traces_after"] == step["traces_before"]:
                # A step that removes nothing alone is there only for the final declaration after it.
                assert following is not None and following["final"] and not step["final"], scenario
                continue
            assert step["traces_after"] < step["traces_before"], scenario
            assert step["seconds_saved"] > 0, scenario


def test_fixes_never_edit_tensorflow_or_keras(results: dict[str, Any]) -> None:
    for found in results.values():
        for step in found["plan"]:
            for edit in step["edits"]:
                assert edit["path"] == "prog.py"
    keras_step = results["keras_predict_pad"]["plan"][0]
    # The third call hit the relaxed trace and was never recorded: the sizes are lower bounds,
    # but for the rows, padded to a multiple of the batch size passed to predict.
    assert "rows to a multiple of 32, predict's batch size, dim 1 to at least 9" in keras_step["summary"]


def test_a_none_state_starts_as_zeros_of_the_right_shape(results: dict[str, Any]) -> None:
    edited = results["none_state"]["edited"]
    assert "state = tf.zeros([2, 4], dtype=tf.float32)" in edited
    assert "tf.constant(None" not in edited
    assert "the same result only if" not in results["none_state"]["plan"][0]["summary"]


def test_main_cause_is_the_cause_whose_fix_saves_the_most(results: dict[str, Any]) -> None:
    # 10 traces: 5 new tf.function objects x 2 batch shapes; moving the def out removes 8 of them.
    assert results["def_in_method"]["main_cause"] == "new-function-object"
    assert results["widening_shapes"]["main_cause"] == "shape-changed"


def test_a_class_index_becomes_an_int32_tensor(results: dict[str, Any]) -> None:
    assert "class_loss(logits, tf.constant(label, dtype=tf.int32))" in results["class_index"]["edited"]


SHAPES: list[tuple[int | None, ...] | None] = [
    None, (), (3,), (None,), (4,), (3, 2), (3, None), (None, 2), (None, None), (4, 2), (3, 2, 1),
]


def test_the_replay_rules_agree_with_tensorflows_own_trace_types() -> None:
    import itertools as it

    import tensorflow as tf
    from tensorflow.core.function.trace_type import trace_type_builder

    from tfretrace._tf.types import leaves_of
    from tfretrace.fix.core.rules import common_leaf, leaf_covers
    from tfretrace.records.events import Leaf

    def spec(shape: tuple[int | None, ...] | None, dtype: Any = tf.float32) -> Any:
        return tf.TensorSpec(None if shape is None else list(shape), dtype)

    def leaf(shape: tuple[int | None, ...] | None, dtype: str = "float32") -> Leaf:
        return Leaf("x", "tensor", dtype=dtype, shape=shape)

    for a, b in it.product(SHAPES, repeat=2):
        # TensorSpec subtyping: a trace of shape a serves a call of shape b.
        assert leaf_covers(leaf(a), leaf(b)) == spec(b).is_subtype_of(spec(a)), (a, b)
        common = spec(a).most_specific_common_supertype([spec(b)])
        ours = common_leaf(leaf(a), leaf(b))
        assert ours is not None and common is not None
        assert ours.shape == (None if common.shape.rank is None else tuple(common.shape.as_list())), (a, b)
    assert not leaf_covers(leaf((3,)), leaf((3,), "float64"))
    assert spec((3,)).most_specific_common_supertype([spec((3,), tf.float64)]) is None
    assert common_leaf(leaf((3,)), leaf((3,), "float64")) is None
    # Literals, as the adapter records them: up to TF 2.21 equal values share a trace whatever
    # their Python type (1, 1.0, True), from 2.23 only values of one type and sign; none generalize.
    context = trace_type_builder.InternalTracingContext()
    values: list[Any] = [1, 1.0, True, 2, 0, False, 0.0, -0.0, "a", "b", None, 2.5, float("nan"), math.nan]
    for x, y in it.product(values, repeat=2):
        tx, ty = trace_type_builder.from_value(x, context), trace_type_builder.from_value(y, context)
        [lx], [ly] = leaves_of(tx, "n"), leaves_of(ty, "n")
        assert leaf_covers(lx, ly) == ty.is_subtype_of(tx), (x, y)
        assert (common_leaf(lx, ly) is None) == (tx.most_specific_common_supertype([ty]) is None), (x, y)


def test_applying_only_the_mechanical_edits_is_predicted_too(results: dict[str, Any]) -> None:
    # def_in_method: the advice (move the def) is not applied by an edit; the signature alone
    # leaves one trace per tf.function object. The scenarios run in-process through runpy, whose
    # module is gone when the plan is made: no probe, so every signature is unsafe and --apply
    # alone leaves the traces; --unsafe-fixes makes them.
    assert results["def_in_method"]["applied_unsafe"] == 5
    assert results["widening_shapes"]["applied_unsafe"] == 1
    assert results["variable_lists"]["applied_unsafe"] == 2
    assert results["widening_shapes"]["applied_only"] == 5


def test_a_partial_training_batch_keeps_every_example(results: dict[str, Any]) -> None:
    # The last training batch is smaller: the signature leaves the batch open, so every batch of
    # both datasets is still used (drop_remainder would skip 8 training examples an epoch).
    edited = results["train_and_validation"]["edited"]
    assert "drop_remainder" not in edited
    assert "tf.TensorSpec(shape=[None, 8], dtype=tf.float32)" in edited
    assert results["train_and_validation"]["measured"] == 2


def test_every_planned_edit_is_at_an_anchor_of_its_kind(results: dict[str, Any]) -> None:
    """`fix` replays a session's edits only at the anchors fix.kinds' anchor checks know: the planner's own pass."""
    from tfretrace.fix.applying.anchors import anchors_for, check_edit
    from tfretrace.fix.core.source import SourceReader
    from tfretrace.fix.planning.plan import plan_steps
    from tfretrace.records.function_report import FunctionReport

    checked = 0
    for result in results.values():
        if not result.get("report"):
            continue
        report = FunctionReport.from_dict(result["report"])
        anchors = anchors_for(report, SourceReader(result["folder"]))
        for step in plan_steps(report):
            for edit in step.edits:
                check_edit(step.kind, anchors, edit)  # AnchorError names the scenario's file:line
                checked += 1
    assert checked >= len([k for k, r in results.items() if any(s["edits"] for s in r["plan"])])


def test_keras_predict_on_small_inputs_becomes_a_model_call(results: dict[str, Any]) -> None:
    # The same NumPy result, and no predict function left to trace (measured 0 above).
    assert "y = model(x, training=False).numpy()" in results["keras_predict"]["edited"]
    assert [s["by"] for s in results["keras_predict"]["plan"]] == ["tfretrace"]
    assert [s["by"] for s in results["keras_predict_pad"]["plan"]] == ["hand"]


def test_a_list_the_body_only_sums_is_stacked_by_tfretrace(results: dict[str, Any]) -> None:
    edited = results["list_of_tensors"]["edited"]
    assert "return tf.reduce_sum(losses, axis=0)" in edited
    assert "total(tf.stack([tf.constant(1.0)] * n))" in edited
    assert [s["by"] for s in results["list_of_tensors"]["plan"]] == ["tfretrace", "tfretrace"]
