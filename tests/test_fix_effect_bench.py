"""bench/fix_effect.py's judgements: the minimum a plan says is reachable, and what counts as output."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parents[1] / "bench" / "fix_effect.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fix_effect", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fix_effect"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


fix_effect = _bench()


def step(
    before: int, after: int, summary: str = "a fix", edits: bool = True, kind: str = "input-signature"
) -> dict[str, Any]:
    return {
        "kind": kind,
        "summary": summary,
        "edits": [{"path": "p.py"}] if edits else [],
        "traces_before": before,
        "traces_after": after,
    }


def test_the_minimum_is_the_plans_lowest_count_advice_included() -> None:
    plan = [step(10, 2, kind="advice", edits=False), step(2, 1, kind="drop-remainder")]
    assert fix_effect.minimum(plan, 1) == 1
    assert fix_effect.by_hand(plan)
    assert not fix_effect.by_hand(plan[1:])


def test_a_statement_that_traces_are_expected_sets_the_minimum() -> None:
    # Two list lengths of tf.Variables: two traces are expected, so 2 is the minimum, not 1.
    said = step(2, 2, "variables is a list of tf.Variables of 2 lengths: one trace per length is expected",
                edits=False, kind="statement")
    assert fix_effect.minimum([said], 1) == 2
    assert not fix_effect.by_hand([said])


def test_a_plan_that_cannot_say_leaves_the_minimum_at_no_retrace() -> None:
    # Read from the step's open field, whatever its words say.
    unpredictable = dict(step(5, 5, "(any words)", False, "statement"), open="replay-differs")
    unaddressed = dict(step(3, 3, "(any words)", False, "statement"), open="no-checked-fix")
    assert fix_effect.minimum([unpredictable], 1) == 1
    assert fix_effect.minimum([step(5, 3), unaddressed], 1) == 1
    assert fix_effect.minimum([], 2) == 2
    # The same words without the field are a statement that the traces are expected.
    assert fix_effect.minimum([step(5, 3), step(3, 3, unaddressed["summary"], False, "statement")], 1) == 3


def test_trace_count_lines_are_not_program_output() -> None:
    before = "epoch 0: loss 0.5000\ntraces: 4\n"
    assert fix_effect.program_output(before) == fix_effect.program_output("epoch 0: loss 0.5000\ntraces: 1\n")
    assert fix_effect.program_output(before) != fix_effect.program_output("epoch 0: loss 0.5001\ntraces: 1\n")


def test_output_is_judged_only_when_the_program_repeats_itself() -> None:
    judge = fix_effect.judge
    assert judge("loss 0.5\ntraces: 4\n", "loss 0.5\ntraces: 4\n", "loss 0.5\ntraces: 1\n", set()) == "same"
    assert judge("loss 0.5\n", "loss 0.7\n", "loss 0.5\n", set()) == "nondeterministic"
    # No applied step says it changes the results (its `changes` field): a changed output is broken.
    assert judge("4 steps\n", "4 steps\n", "3 steps\n", set()) == "CHANGED"
    # drop_remainder says it skips the partial batch: that change is announced, not a broken fix.
    assert judge("4 steps\n", "4 steps\n", "3 steps\n", {"examples"}) == "changed as examples says"


def test_framework_advice_is_by_hand_and_leaves_the_minimum_at_no_retrace() -> None:
    # A tf.data pipeline rebuilt per epoch: the plan can only advise (TensorFlow's code traced).
    advice = dict(step(3, 3, "(any words)", edits=False, kind="statement"), open="framework-code")
    assert fix_effect.minimum([advice], expected=1) == 1
    assert fix_effect.by_hand([advice])
    assert not fix_effect.by_hand([dict(advice, open=None)])


def test_help_explains_the_bench_and_runs_nothing(capsys: Any) -> None:
    import pytest

    with pytest.raises(SystemExit) as done:
        fix_effect.main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python bench/fix_effect.py") and "SCRIPT" in out


def test_who_makes_a_step_is_read_from_its_by_field() -> None:
    made = dict(step(3, 1), by="tfretrace")
    assert not fix_effect.by_hand([made])
    assert fix_effect.by_hand([dict(step(3, 1, edits=False, kind="advice"), by="hand")])
