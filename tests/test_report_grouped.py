"""The grouped terminal report (issue 40 items 1-3) and the table fixes of issue 41 item 7.

Asserted on the stories' and fix lines' fields and on the demo's stored session, not on prose.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import sessions as S
from tfretrace import cli
from tfretrace.records.catalogue import get
from tfretrace.records.session import load
from tfretrace.render._stories import fix_lines, product_line, stories
from tfretrace.render.text import TextRenderer

DEMO = Path(__file__).parent / "data" / "report_sessions" / "demo_train.json"


def _function(name: str):  # type: ignore[no-untyped-def]
    return next(f for f in load(DEMO).functions if f.name == name)


def test_each_argument_and_cause_is_one_story_over_all_its_retraces() -> None:
    found = [(s.cause, s.count, s.paths) for s in stories(_function("train_step"))]
    # 21 shape retraces over three epochs and 2 learning-rate retraces: two lines, not 23.
    assert found == [("shape-changed", 21, ("tokens",)), ("python-value-changed", 2, ("lr",))]
    xla = [(s.cause, s.count, s.paths) for s in stories(_function("predict_batch"))]
    assert xla == [("xla-recompile", 3, ("tokens",))]


def test_a_story_counts_every_retrace_of_the_function() -> None:
    session = load(DEMO)
    for report in session.functions:
        assert sum(s.count for s in stories(report)) == report.retraces + report.xla_recompiles


def test_fix_steps_are_then_for_steps_that_build_and_or_for_alternatives() -> None:
    batch = fix_lines(_function("evaluate.<locals>.batch_error"))
    assert [(f.joiner, f.safety) for f in batch] == [("fix", "safe"), ("then", "unsafe")]
    xla = fix_lines(_function("predict_batch"))
    # XLA steps are alternatives; the one that saves most comes first.
    assert [(f.joiner, f.safety) for f in xla] == [("fix", "by hand"), ("or", "by hand")]
    assert xla[0].effect.startswith("4 -> 0") and xla[1].effect.startswith("4 -> 2")


def test_the_default_report_has_one_block_per_function_and_the_explanations_once() -> None:
    session = load(DEMO)
    text = TextRenderer(width=80).render(session)
    for report in session.functions:
        for story in stories(report):
            assert text.count(story.line().split("  ")[0]) >= 1
        # Each fix step's headline is printed, its first code line too.
        for fix in fix_lines(report):
            assert fix.headline().split(":")[0] in text
    # No per-trace lines and no Why paragraphs; the causes' codes are named once, in the footer.
    assert "#2 shape-changed" not in text and "Why (" not in text
    assert text.count(get("shape-changed").code) == 1 and text.count(get("python-value-changed").code) == 1


def test_verbose_keeps_the_per_trace_report() -> None:
    text = TextRenderer(width=80, verbose=True).render(load(DEMO))
    assert "#2 shape-changed" in text and "Why (shape-changed, TFR001)" in text


@pytest.mark.parametrize("verbose", [False, True])
@pytest.mark.parametrize("width", [80, 120])
def test_every_line_fits_the_width_code_included(width: int, verbose: bool) -> None:
    # Every example's report (the Keras one prints advice with comments 187 columns wide).
    for path in sorted(DEMO.parent.glob("*.json")):
        text = TextRenderer(width=width, verbose=verbose).render(load(path))
        assert max(len(line) for line in text.split("\n")) <= width, path.stem


def test_report_dash_v_prints_every_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(DEMO)]) == 0
    grouped = capsys.readouterr().out
    assert cli.main(["report", "-v", str(DEMO)]) == 0
    verbose = capsys.readouterr().out
    assert "#2 shape-changed" in verbose and "#2 shape-changed" not in grouped
    assert "21x shape-changed" in grouped


def test_dash_o_keeps_the_summary_line_on_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(DEMO), "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out and out[0].startswith("tfretrace: 4 functions, 40 traces")
    assert not any("21x" in line for line in out)  # the report itself is in the file


def test_the_table_breaks_a_long_name_where_its_parts_join() -> None:
    text = TextRenderer(width=80, verbose=True).render(load(DEMO))
    lines = [line.strip() for line in text.split("\n")]
    at = next(i for i, line in enumerate(lines) if line.startswith("evaluate.<locals>."))
    # The name's second part is whole on the next line (rich folded it mid-word: batch_e / rror).
    assert lines[at + 1].startswith("batch_error") and not lines[at + 1].startswith("rror")


@pytest.mark.parametrize("verbose", [False, True])
def test_a_function_that_did_not_retrace_gets_no_cause_in_the_table(verbose: bool) -> None:
    # A prevented run: traced once, but its plan (from the profile's run) names shape-changed.
    step = {"cause": "shape-changed", "kind": "input-signature", "summary": "one input_signature",
            "code": None, "edits": [], "traces_before": 3, "traces_after": 1, "seconds_saved": 0.1}
    prevented = dataclasses.replace(S.healthy("train_step"), plan=(step,))
    text = TextRenderer(width=120, verbose=verbose).render(S.session(prevented))
    assert "No function retraced" in text
    row = next(line for line in text.split("\n") if line.lstrip().startswith("train_step"))
    assert "shape-changed" not in text and row.rstrip().endswith("-")


def test_the_html_shows_the_grouped_view_first_and_folds_the_details() -> None:
    from tfretrace.render.html import HtmlRenderer

    page = HtmlRenderer().render(load(DEMO))
    train = page.index("<h2>train_step</h2>")
    story = page.index("21x shape-changed", train)
    fix = page.index("fix [safe] one input_signature", train)
    folded = page.index('<details class="details">', train)
    event = page.index('<span class="idx">#2</span>', train)
    assert story < fix < folded < event


def test_new_objects_of_one_argument_are_one_story() -> None:
    report = load(DEMO.parent / "object_identity.json").functions[0]
    found = [(s.cause, s.count, s.paths) for s in stories(report)]
    # Each change names its own object's id: that must not split the story.
    assert found == [("object-identity", 3, ("config",))]


def test_traces_that_are_the_product_of_two_arguments_say_so() -> None:
    train = _function("train_step")
    # 8 sizes of tokens dim 1 times 3 learning rates: every new lr traced every size again.
    assert product_line(train, stories(train)) == "8 tokens dim 1 sizes x 3 lr values = 24 traces"
    batch = _function("evaluate.<locals>.batch_error")
    assert product_line(batch, stories(batch)) == ""  # one changed argument: nothing to multiply


def test_a_headline_share_is_of_the_seconds_beside_it() -> None:
    # predict_batch traced once and compiled four times: its headline's seconds are both, so its
    # share of the wall is of both (it said 0.6% beside 495 ms of a 6 s run, tracing alone).
    from tfretrace.render._grouped import headline

    session = load(DEMO)
    report = _function("predict_batch")
    _name, figures = headline(report, session)
    share = (report.trace_seconds + report.xla_compile_seconds) / session.wall_of(report.worker)
    assert figures.endswith(f"  {share * 100:.1f}%"), figures
    assert not figures.startswith("1 trace"), figures  # one trace, many compiles: the compiles speak


def test_a_plain_runs_unasked_steps_read_unchecked_and_an_asked_runs_read_unsafe() -> None:
    report = _function("train_step")
    step = dict(report.plan[0], safety="unsafe", unasked=True)
    unasked = dataclasses.replace(report, plan=(step, *report.plan[1:]))
    assert fix_lines(unasked, asked=False)[0].safety == "unchecked"
    assert fix_lines(unasked, asked=True)[0].safety == "unsafe"  # the probe ran and found no live function
    assert fix_lines(report, asked=False)[0].safety == "safe"
