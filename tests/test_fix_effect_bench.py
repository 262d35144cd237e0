"""bench/fix_effect.py's judgements: the minimum a plan says is reachable, what counts as output, other data."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "fix_effect.py"
EXAMPLES = sorted([*(ROOT / "examples").glob("*.py"), *(ROOT / "examples" / "wild").glob("*.py")])


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fix_effect", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fix_effect"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


fix_effect = _bench()
fix_judge = sys.modules["fix_judge"]  # what the benches share, imported by bench/fix_effect.py


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


def test_a_generalized_graph_announces_only_numbers_moved_in_their_last_digits() -> None:
    # Issue 33, item 4c: a generalized signature moved a printed loss in its 5th decimal. The
    # step's `changes` (float-last-digits) explains that, and nothing larger or in the words.
    judge, said = fix_effect.judge, {"float-last-digits"}
    before = "epoch 0: loss 0.123456, acc 71.25%\nepoch 1: loss -0.0\n"
    moved = "epoch 0: loss 0.123457, acc 71.25%\nepoch 1: loss 0.0\n"
    assert judge(before, before, moved, said) == "changed as float-last-digits says"
    assert judge(before, before, moved, set()) == "CHANGED"
    assert judge(before, before, before.replace("0.123456", "0.1235"), said) == "CHANGED"
    assert judge(before, before, before.replace("71.25", "71.5"), said) == "CHANGED"
    assert judge("4 steps\n", "4 steps\n", "3 steps\n", said) == "CHANGED"
    assert judge("step 100000\n", "step 100000\n", "step 100001\n", said) == "CHANGED"  # an integer moved
    assert judge(before, before, before.replace("loss", "cost"), said) == "CHANGED"
    # With a change that explains any output (skipped examples), the field stands as before.
    assert judge("4 steps\n", "4 steps\n", "3 steps\n", {"examples", *said}) == (
        "changed as examples, float-last-digits says")


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


# ---------------------------------------------------------------------------------------------
# Other data: every applied program runs again on another seed and size, beside the original


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.relative_to(ROOT / "examples").as_posix())
def test_every_example_takes_an_int_seed_and_size(example: Path) -> None:
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(example.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
            flag, kw = node.args[0], {k.arg: k.value for k in node.keywords}
            default, kind = kw.get("default"), kw.get("type")
            if isinstance(flag, ast.Constant) and isinstance(default, ast.Constant):
                assert isinstance(kind, ast.Name) and kind.id == "int"
                found[str(flag.value)] = int(str(default.value))
    assert set(found) >= {"--seed", "--size"}
    # The other data really is another size.
    assert fix_judge.other_args(example) == ["--seed", "1", "--size", str(fix_judge.other_size(example))]
    assert fix_judge.other_size(example) != found["--size"]


def test_the_other_size_is_three_quarters_plus_one_or_one_more_when_that_is_the_same(tmp_path: Path) -> None:
    script = tmp_path / "p.py"
    for default, other in ((100, 76), (20, 16), (8, 7), (4, 5), (2, 3), (1, 2)):
        script.write_text(f'parser.add_argument("--size", type=int, default={default})\n', encoding="utf-8")
        assert fix_judge.other_size(script) == other, default


def ran(status: int, stdout: str) -> Any:
    return fix_effect.Ran(status, stdout, "" if status == 0 else "ValueError: shape", {})


def test_on_other_data_a_crash_or_an_unannounced_change_is_broken() -> None:
    judge_other, broken = fix_effect.judge_other, fix_effect.broken
    original = ran(0, "mean 3.0\ntraces: 2\n")
    assert judge_other(original, ran(0, "mean 3.0\ntraces: 1\n"), set(), True) == "same"
    crashed = judge_other(original, ran(1, ""), set(), True)
    assert crashed.startswith("FAILED") and broken(crashed)
    assert judge_other(original, ran(0, "mean 3.5\n"), set(), True) == "CHANGED"
    assert broken("CHANGED")
    # Announced by an applied step's `changes` field: reported, not a failure.
    announced = judge_other(original, ran(0, "mean 3.5\n"), {"examples"}, True)
    assert announced == "changed as examples says" and not broken(announced)
    # Not judged where the original itself differs between runs, or fails on the other data.
    assert judge_other(original, ran(0, "mean 3.5\n"), set(), False) == "nondeterministic"
    assert not broken(judge_other(ran(1, ""), ran(1, ""), set(), True))


def row(example: str, output: str, other: str, output_unsafe: str = "same", other_unsafe: str = "same") -> Any:
    return fix_effect.Row(example, "f", 3, 1, 1, 1, False, output, True, 1, 1, output_unsafe, other, other_unsafe)


def test_a_program_broken_only_on_other_data_counts_as_broken() -> None:
    rows = [row("a.py", "same", "same"), row("b.py", "same", "CHANGED"), row("c.py", "FAILED (exit 1): x", "same"),
            row("d.py", "same", "same", other_unsafe="FAILED (exit 1): y")]
    assert fix_effect.broken_programs(rows) == {"b.py", "c.py"}
    assert fix_effect.broken_programs(rows, other_only=True) == {"b.py"}
    assert fix_effect.broken_programs(rows, unsafe=True) == {"d.py"}


# A mean over batches of two sizes (a retrace); its data follow --seed and --size.
PROGRAM = """\
import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=8)
args = parser.parse_args()


@tf.function
def mean(x):
    return tf.reduce_mean(x)


for n in (args.size, args.size // 2):
    print("mean", round(float(mean(tf.range(n, dtype=tf.float32) + args.seed)), 4))
"""


def _examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "examples"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.setattr(fix_effect, "EXAMPLES", folder)
    return folder / "prog.py"


@pytest.mark.tf
def test_an_edit_fitted_to_the_recorded_data_is_broken_on_other_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A deliberately bad edit in place of `tfretrace fix --apply`: the recorded size written in as a
    # constant. The recorded run prints the same; another size prints other means.
    def bad_fix(folder: Path, unsafe: bool) -> subprocess.CompletedProcess[str]:
        program = folder / "prog.py"
        program.write_text(program.read_text().replace("(args.size, args.size // 2)", "(8, 8 // 2)"))
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(fix_effect, "apply_fix", bad_fix)
    rows = fix_effect.measure(_examples(tmp_path, monkeypatch))
    assert [(r.function, r.before) for r in rows] == [("mean", 2)]
    assert rows[0].output == "same"  # on the recorded data nothing shows
    assert rows[0].other == "CHANGED"
    assert fix_effect.broken_programs(rows) == fix_effect.broken_programs(rows, other_only=True) == {"prog.py"}


@pytest.mark.tf
def test_tfretraces_own_fix_computes_the_same_on_other_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = fix_effect.measure(_examples(tmp_path, monkeypatch))
    assert [(r.function, r.before, r.after) for r in rows] == [("mean", 2, 1)]  # TensorFlow's counter
    assert (rows[0].output, rows[0].other) == ("same", "same")
    assert fix_effect.broken_programs(rows) == set()
