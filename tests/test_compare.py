"""tfretrace compare and baselines on hand-built sessions: pairing, verdicts, formats, exit codes."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import sessions as S
from tfretrace.cli import main
from tfretrace.compare.baseline import Baseline, baseline_of, load_baseline, load_run
from tfretrace.compare.comparison import NEW, VANISHED, compare, run_of
from tfretrace.records.events import Change
from tfretrace.records.function_key import EXACT, MOVED, FunctionKey
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session, SessionFormatError
from tfretrace.render.comparison import render_comparisons

STEP = FunctionKey("train", "train_step", "aaaa")
EVAL = FunctionKey("train", "eval_step", "bbbb")


def steady(location: str = "train.py:12", key: FunctionKey = STEP) -> FunctionReport:
    """train_step traced once."""
    return replace(S.healthy("train_step", location), key=key)


def worse(location: str = "train.py:32", key: FunctionKey = STEP, lr_retraces: int = 3) -> FunctionReport:
    """train_step retraced: a partial batch once, then a Python lr each epoch."""
    events = [S.event(1, "first-trace", time=0.1, calls_total=1)]
    shape = Change("x", "shape", "(32, 10)", "(8, 10)", "dim 0")
    events.append(replace(S.event(2, "shape-changed", time=0.2, calls_total=4, changes=(shape,)),
                          call_site="train.py:60"))
    for i in range(lr_retraces):
        lr = Change("lr", "python-value", repr(0.1 * (i + 1)), repr(0.1 * (i + 2)))
        events.append(replace(S.event(3 + i, "python-value-changed", time=0.3 + i, calls_total=5 + i,
                                      changes=(lr,)), call_site="train.py:58"))
    return FunctionReport("train_step", location, calls=20, traces=len(events), trace_seconds=0.5, objects=1,
                          events=tuple(events), key=key)


def session(*functions: FunctionReport, tensorflow: str = "2.21.0", keras: str = "3.15.1") -> Session:
    return Session(functions=functions, wall_seconds=3.0, tensorflow=tensorflow, keras=keras, python="3.11.7")


def save(path: Path, value: Session) -> str:
    value.save(path)
    return str(path)


def test_a_worse_function_names_its_new_causes_with_argument_before_after_and_call_site() -> None:
    result = compare(run_of(session(steady(), replace(S.healthy(), key=EVAL)), "base"),
                     run_of(session(worse(), replace(S.healthy(), key=EVAL)), "head"))
    assert [(d.name, d.how, d.worse) for d in result.deltas] == [("train_step", EXACT, True),
                                                                   ("eval_step", EXACT, False)]
    delta = result.worse[0]
    assert (delta.traces, delta.retraces) == ((1, 5), (0, 4))
    assert [(c.cause, c.added, c.argument, c.before, c.after, c.call_site, c.trace) for c in delta.new_causes] == [
        ("python-value-changed", 3, "lr", "0.1", "0.2", "train.py:58", 3),
        ("shape-changed", 1, "x", "(32, 10)", "(8, 10)", "train.py:60", 2),
    ]
    assert result.new == result.vanished == ()


def test_the_first_new_event_is_the_one_after_the_base_runs_count_of_that_cause() -> None:
    base, head = worse(lr_retraces=2), worse(lr_retraces=4)
    delta = compare(run_of(session(base), "b"), run_of(session(head), "h")).worse[0]
    (cause,) = delta.new_causes
    # The base run had two lr retraces (traces 3 and 4): the first new one is trace 5.
    assert (cause.cause, cause.added, cause.trace, cause.before) == ("python-value-changed", 2, 5, repr(0.1 * 3))


def test_tolerance_allows_that_many_extra_retraces() -> None:
    base, head = run_of(session(steady()), "b"), run_of(session(worse()), "h")
    assert compare(base, head, tolerance=3).worse != ()
    assert compare(base, head, tolerance=4).worse == ()
    with pytest.raises(ValueError, match="tolerance"):
        compare(base, head, tolerance=-1)


def test_moved_function_is_matched_and_new_and_vanished_are_listed() -> None:
    moved = FunctionKey("pkg.train", "train_step", "aaaa")
    gone = replace(S.healthy("old_step", "train.py:80"), key=FunctionKey("train", "old_step", "cccc"))
    born = replace(S.healthy("new_step", "pkg/train.py:80"), key=FunctionKey("pkg.train", "new_step", "dddd"))
    result = compare(run_of(session(steady(), gone), "b"), run_of(session(born, steady("pkg/train.py:40", moved)), "h"))
    hows = {d.name: d.how for d in result.deltas}
    assert hows == {"train_step": MOVED, "new_step": NEW, "old_step": VANISHED}
    assert result.worse == ()  # traced once each: nothing got worse


def test_a_new_function_that_retraces_is_worse() -> None:
    result = compare(run_of(session(), "b"), run_of(session(worse()), "h"))
    assert [(d.how, d.worse) for d in result.deltas] == [(NEW, True)]


def test_more_xla_compiles_count_as_worse() -> None:
    base = replace(steady(), xla_compiles=1, xla_compile_seconds=0.5)
    head = replace(steady(), xla_compiles=3, xla_compile_seconds=1.5)
    result = compare(run_of(session(base), "b"), run_of(session(head), "h"))
    assert result.worse and result.worse[0].xla_compiles == (1, 3)


def test_costliest_change_first() -> None:
    cheap = replace(S.healthy("a", "x.py:1"), key=FunctionKey("x", "a"))
    dear = replace(S.healthy("b", "x.py:9"), key=FunctionKey("x", "b"))
    base = session(cheap, dear)
    head = session(replace(cheap, trace_seconds=0.2), replace(dear, trace_seconds=2.0))
    assert [d.name for d in compare(run_of(base, "b"), run_of(head, "h")).deltas] == ["b", "a"]


def test_version_changes_are_named() -> None:
    result = compare(run_of(session(steady()), "b"), run_of(session(steady(), tensorflow="2.23.0"), "h"))
    assert result.version_changes() == [("TensorFlow", "2.21.0", "2.23.0")]
    assert result.to_dict()["version_changes"] == [{"what": "TensorFlow", "base": "2.21.0", "head": "2.23.0"}]


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    return (save(tmp_path / "base.json", session(steady(), replace(S.healthy(), key=EVAL))),
            save(tmp_path / "head.json", session(worse(), replace(S.healthy(), key=EVAL), tensorflow="2.23.0")))


def run_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_exit_codes(files: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, head = files
    assert run_cli("compare", base, head, capsys=capsys)[0] == 1
    assert run_cli("compare", base, base, capsys=capsys)[0] == 0
    assert run_cli("compare", base, head, "--tolerance", "4", capsys=capsys)[0] == 0
    status, out, err = run_cli("compare", base, str(tmp_path / "missing.json"), capsys=capsys)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "missing.json: no such file" in err
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    assert run_cli("compare", str(tmp_path / "bad.json"), head, capsys=capsys)[0] == 2
    assert run_cli("compare", base, head, "--format", "yaml", capsys=capsys)[0] == 2
    assert run_cli("compare", base, head, "--tolerance", "-1", capsys=capsys)[0] == 2
    # Several heads: each is compared with the base, and one worse head is enough to fail.
    assert run_cli("compare", base, base, head, capsys=capsys)[0] == 1


def test_json_format(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli("compare", *files, "--format", "json", capsys=capsys)
    data = json.loads(out)
    assert status == 1 and data["worse"] == 1
    (comparison,) = data["comparisons"]
    row = comparison["functions"][0]
    assert (row["name"], row["match"], row["worse"], row["retraces"]) == ("train_step", "exact", True, [0, 4])
    assert row["retraces_by_cause"]["head"] == {"python-value-changed": 3, "shape-changed": 1}
    assert [c["argument"] for c in row["new_causes"]] == ["lr", "x"]
    assert comparison["version_changes"] == [{"what": "TensorFlow", "base": "2.21.0", "head": "2.23.0"}]


def test_markdown_is_a_table_with_the_reasons(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli("compare", *files, "--format", "markdown", capsys=capsys)
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert len(rows) == 1
    assert rows[0].startswith("| `train_step` `train.py:32` | same (was `train.py:12`) | 1 → 5 (+4) | 0 → 4 (+4) |")
    assert rows[0].count("|") == 9
    assert "| `python-value-changed` 0 → 3, `shape-changed` 0 → 1 |" in rows[0]
    assert "- **`python-value-changed`** +3: `lr: Python 0.1 -> 0.2`" in out
    assert "TensorFlow `2.21.0` → `2.23.0`" in out


def test_github_format_annotates_call_sites(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli("compare", *files, "--format", "github", capsys=capsys)
    errors = [line for line in out.splitlines() if line.startswith("::error file=")]
    assert [line.split("::")[1].split(",title=")[0] for line in errors] == [
        "error file=train.py,line=58", "error file=train.py,line=60"]


def test_recorded_strings_cannot_break_the_formats() -> None:
    hostile = replace(worse(), name="a|b`c\x1b[31m", key=FunctionKey("m", "x"))
    comparison = compare(run_of(session(), "b"), run_of(session(hostile), "h\nx"))
    assert "\x1b" not in render_comparisons([comparison], "text")
    markdown = render_comparisons([comparison], "markdown")
    row = next(line for line in markdown.splitlines() if line.startswith("| `"))
    assert row.count("|") - row.count("\\|") == 9
    github = render_comparisons([comparison], "github")
    assert all(line.startswith("::") for line in github.splitlines())


HOSTILE = ("x ![img](http://evil.example/p.png) [link](http://evil.example) <img src=x onerror=alert(1)> "
           "@octocat www.evil.example **b** \n::error::pwned %0A\r::add-mask::y")


def _outside_code_spans(markdown: str) -> str:
    return re.sub(r"`[^`]*`", "", markdown)


def test_recorded_strings_render_as_text_in_markdown_and_never_as_workflow_commands() -> None:
    # Every string a run holds: the TensorFlow version, the function's name and place, the cause,
    # the changed argument's path and values, the call site.
    head = worse(location=HOSTILE + ".py:32")
    change = Change(HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE)
    events = list(head.events)
    events[1] = replace(events[1], cause=HOSTILE, changes=(change,), call_site=HOSTILE + ":60")
    head = replace(head, name=HOSTILE, events=tuple(events))
    comparison = compare(run_of(session(steady()), "b"), run_of(session(head, tensorflow=HOSTILE), "h"))
    assert comparison.worse
    markdown = render_comparisons([comparison], "markdown")
    assert "octocat" in markdown and "evil.example" in markdown  # shown, as text
    outside = _outside_code_spans(markdown)
    for active in ("![", "](", "<", "@", "http", "www.", "**b**", "::"):
        assert active not in outside, active
    assert not any(line.startswith("::") for line in markdown.splitlines())
    github = render_comparisons([comparison], "github")
    lines = github.splitlines()
    # One annotation per new cause of the worse function, then the summary: nothing else.
    assert len(lines) == len(comparison.worse[0].new_causes) + 1
    assert all(re.match(r"::(error|notice) [^:]*::", line) for line in lines), lines
    assert "%250A" in github and "%0A" in github  # the data's own % escaped first, its newline escaped
    assert not any(line.startswith(("::add-mask", "::error::pwned")) for line in lines)


def test_baseline_is_small_sorted_and_stable(tmp_path: Path) -> None:
    run = session(worse(), replace(S.healthy(), key=EVAL))
    shuffled = session(replace(S.healthy(), key=EVAL, trace_seconds=9.0), replace(worse("train.py:90")))
    first, second = baseline_of(run).to_json(), baseline_of(shuffled).to_json()
    assert first == second  # seconds and line numbers are not in a baseline
    data = json.loads(first)
    assert [f["qualname"] for f in data["functions"]] == ["eval_step", "train_step"]
    assert data["functions"][1]["causes"] == {"python-value-changed": 3, "shape-changed": 1}
    assert set(data["functions"][1]) == {"module", "qualname", "code_hash", "name", "traces", "retraces", "causes",
                                         "xla_compiles"}
    baseline_of(run).save(tmp_path / "b.json")
    assert load_baseline(tmp_path / "b.json") == Baseline.from_dict(data)
    # A baseline is a base run like a session is.
    assert compare(load_run(tmp_path / "b.json"), run_of(run, "h")).worse == ()
    assert compare(load_run(tmp_path / "b.json"), run_of(session(worse(lr_retraces=5)), "h")).worse != ()


def test_bad_baselines_are_one_line_errors(tmp_path: Path) -> None:
    for text, message in [('{"tfretrace_baseline": 2}', "not supported"),
                          ('{"tfretrace_baseline": 1, "functions": [{"module": 1}]}', "malformed"),
                          ('{"tfretrace_baseline": 1, "tests": {"t": []}}', "pytest baseline")]:
        (tmp_path / "b.json").write_text(text, encoding="utf-8")
        with pytest.raises(SessionFormatError, match=message):
            load_run(tmp_path / "b.json")


def test_compare_runs_without_tensorflow(files: tuple[str, str]) -> None:
    code = ("import sys\nsys.modules['tensorflow'] = None\nsys.modules['keras'] = None\n"
            "from tfretrace.cli import main\nraise SystemExit(main(['compare', *sys.argv[1:], '--format', 'json']))\n")
    result = subprocess.run([sys.executable, "-c", code, *files], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["worse"] == 1


def test_text_output_fits_the_width_and_lists_only_changed_functions() -> None:
    comparison = compare(run_of(session(steady(), replace(S.healthy(), key=EVAL)), "b"),
                         run_of(session(worse(), replace(S.healthy(), key=EVAL)), "h"))
    text = render_comparisons([comparison], "text", width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "train_step" in text and "eval_step" not in text  # unchanged: counted, not listed


def test_pytest_gate_fails_only_a_worse_test_and_update_keeps_the_others(tmp_path: Path) -> None:
    from tfretrace.compare.comparison import counts_of
    from tfretrace.integrations.pytest_baseline import BaselineGate

    path = tmp_path / "tests.json"
    with pytest.raises(ValueError, match="no such file"):
        BaselineGate.open(str(path), update=False)
    updater = BaselineGate.open(str(path), update=True)
    steady_counts, eval_counts = counts_of(steady()), counts_of(replace(S.healthy(), key=EVAL))
    entries = {"functions": json.loads(baseline_of(session(steady())).to_json())["functions"],
               "tensorflow": "2.21.0", "keras": "3.15.1"}
    others = {"functions": json.loads(baseline_of(session(replace(S.healthy(), key=EVAL))).to_json())["functions"]}
    assert updater.write([("t.py::test_a", entries), ("t.py::test_b", others)]) == 2
    gate = BaselineGate.open(str(path), update=False)
    assert gate.failure("t.py::test_a", (steady_counts,)) is None
    assert gate.failure("t.py::test_b", (eval_counts,)) is None
    assert gate.failure("t.py::test_new", (counts_of(worse()),)) is None  # not in the baseline
    message = gate.failure("t.py::test_a", (counts_of(worse()),))
    assert message is not None and "lr: Python 0.1 -> 0.2" in message and "retraces 0 -> 4" in message
    # Updating one test rewrites its entry only.
    BaselineGate.open(str(path), update=True).write([("t.py::test_a", {"functions": []})])
    stored = json.loads(path.read_text())
    assert stored["tests"]["t.py::test_a"] == [] and stored["tests"]["t.py::test_b"] == others["functions"]
    assert stored["tensorflow"] == "2.21.0"
    path.write_text('{"tfretrace_baseline": 1, "tests": {"t": 3}}', encoding="utf-8")
    with pytest.raises(ValueError, match="malformed"):
        BaselineGate.open(str(path), update=False)


DATA = Path(__file__).parent / "data"


def test_upgrade_sessions_from_two_versions_compare_like_two_commits() -> None:
    # Real sessions of tests/data/upgrade.py, recorded under TF 2.18.1 + Keras 3.6.0 and under
    # TF 2.21.0 + Keras 3.15.1 (`tfretrace run --save`): Keras renamed its train function between
    # them, and the rows still pair by their model's key.
    old, new = load_run(DATA / "upgrade_tf2.18.json"), load_run(DATA / "upgrade_tf2.21.json")
    result = compare(old, new)
    assert result.version_changes() == [("TensorFlow", "2.18.1", "2.21.0"), ("Keras", "3.6.0", "3.15.1")]
    assert result.new == result.vanished == result.worse == ()
    raw = {c.key.qualname: c.name for c in old.functions}
    assert raw["keras:Sequential.train"] == "sequential.fit"
    names = [json.loads((DATA / f).read_text())["functions"] for f in ("upgrade_tf2.18.json", "upgrade_tf2.21.json")]
    trains = [next(f["name"] for f in fs if f["key"]["qualname"] == "keras:Sequential.train") for fs in names]
    assert trains[0] != trains[1]  # make_train_function's closure then, _make_function's now
    assert sorted((d.name, d.how) for d in result.deltas) == [
        ("sequential.fit", EXACT), ("sequential.predict", EXACT), ("step", EXACT)]
    assert "TensorFlow 2.18.1 -> 2.21.0; Keras 3.6.0 -> 3.15.1" in render_comparisons([result], "text")


def test_run_gate_saves_only_after_a_good_run_and_the_programs_status_wins(tmp_path: Path) -> None:
    import argparse

    from tfretrace.cli.compare_command import RunGate

    path = tmp_path / "baseline.json"
    ns = argparse.Namespace(save_baseline=str(path), baseline=None)
    err = io.StringIO()
    assert RunGate.from_args(ns).finish(session(worse()), 3, 0, err) == 3
    assert not path.exists() and "baseline not saved" in err.getvalue()
    assert RunGate.from_args(ns).finish(session(steady()), 0, 0, err) == 0
    assert json.loads(path.read_text())["functions"][0]["retraces"] == 0
    check = RunGate.from_args(argparse.Namespace(save_baseline=None, baseline=str(path)))
    assert check.finish(session(worse()), 0, 0, err) == 1
    assert check.finish(session(worse()), 0, 4, err) == 0  # within the tolerance
    assert check.finish(session(worse()), 5, 0, err) == 5  # a failed program keeps its status


def test_a_nested_def_moved_to_module_level_is_matched_by_code_or_by_the_base_plans_move() -> None:
    from tfretrace.records.function_key import HOISTED
    from tfretrace.records.matching import match

    nested = FunctionKey("train", "run_epoch.<locals>.score", "abc")
    hoisted = FunctionKey("train", "score", "abc")
    edited = FunctionKey("train", "score", "def")  # the fix also changed its decorator
    # Without the move (a plain match, as prevention's profile uses): new and vanished.
    plain = match([nested], [hoisted])
    assert plain.pairs == () and plain.new == (hoisted,) and plain.vanished == (nested,)
    # Same module, same code, its own last name: the move (a baseline knows no plan).
    by_code = match([nested], [hoisted], moved_to=lambda k: None)
    assert [(p.base, p.head, p.how) for p in by_code.pairs] == [(nested, hoisted, HOISTED)]
    # Other code: only the base plan's move pairs them.
    assert match([nested], [edited], moved_to=lambda k: None).pairs == ()
    by_plan = match([nested], [edited], moved_to=lambda k: "score" if k is nested else None)
    assert [(p.base, p.head, p.how) for p in by_plan.pairs] == [(nested, edited, HOISTED)]
    # Another module's `score`, or a method's, is not it.
    other = FunctionKey("evaluate", "score", "abc")
    method = FunctionKey("train", "Model.score", "abc")
    assert match([nested], [other, method], moved_to=lambda k: "score").pairs == ()


def test_a_baseline_keeps_the_move_so_the_fixed_and_edited_def_pairs_with_the_nested_one(tmp_path: Path) -> None:
    # A baseline holds no plan: the nested def the fix hoisted and also gave a signature (other
    # code) came out as 1 new, 1 vanished in the new user's walk (compare base.json after.json).
    from tfretrace.compare.baseline import Baseline, load_baseline
    from tfretrace.compare.comparison import Counts, Run, compare
    from tfretrace.records.function_key import HOISTED

    nested = Counts(FunctionKey("train", "validate.<locals>.error", "abc"), "validate.<locals>.error",
                    traces=9, retraces=8, moved_to="error")
    path = tmp_path / "base.json"
    Baseline((nested,)).save(path)
    base = load_baseline(path)
    assert [c.moved_to for c in base.functions] == ["error"]
    edited = Counts(FunctionKey("train", "error", "def"), "error", traces=1, retraces=0)
    found = compare(base.run("base"), Run("head", (edited,)))
    assert [(d.how, d.base.traces if d.base else None, d.head.traces if d.head else None)
            for d in found.deltas] == [(HOISTED, 9, 1)]


def test_moved_name_reads_the_def_the_plan_inserts() -> None:
    from tfretrace.records.matching import moved_name

    report = FunctionReport("run_epoch.<locals>.score", "train.py:15", 12, 4, 0.1, 4, (),
                            key=FunctionKey("train", "run_epoch.<locals>.score", "abc"),
                            plan=({"kind": "hoist-def", "edits": [
                                {"path": "train.py", "line": 16, "col": 4, "end_line": 17, "end_col": 9, "text": ""},
                                {"path": "train.py", "line": 14, "col": 0, "end_line": 14, "end_col": 0,
                                 "text": "@tf.function\ndef score(x):\n    return x\n"}]},))
    assert moved_name(report) == "score"
    assert moved_name(replace(report, plan=())) is None
    # A module-level function is never moved.
    assert moved_name(replace(report, name="score", key=FunctionKey("train", "score", "abc"))) is None
