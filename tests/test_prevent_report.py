"""The prevention report in text, JSON and HTML: the four counts per function, what changed, what was refused."""

from __future__ import annotations

import json

from schema_helpers import schema_errors
from sessions import session, storm
from tfretrace.records.prevention import FunctionPrevention, PreventionReport, render
from tfretrace.records.session import Session
from tfretrace.render.html import HtmlRenderer


def _report() -> PreventionReport:
    row = FunctionPrevention(
        name="train_step", display_name="train_step", location="train.py:8", objects=1, warmups=1,
        warmup_seconds=0.02, traces_without=7, traces_with=2, traces_after_warmup=1, calls_outside=1,
        unpreventable=(("python-value-changed", 1, None),), changes=("random-stream: tf.random.normal",),
        not_warmed=("not warmed: the body reads x's dim 0 as a Python number",), stale=False,
        traces_fixed=3, traces_minimum=1,
    )
    return PreventionReport("profile.json", "2.21.0", (row,), learned=2, written="profile.json")


def test_the_four_counts_stand_side_by_side_in_text() -> None:
    text = render(_report())
    headline = next(line for line in text.splitlines() if line.startswith("  train_step"))
    assert [int(word.rstrip(",")) for word in headline.split() if word.rstrip(",").isdigit()] == [7, 2, 3, 1]
    assert "random-stream" in text and "profile widened: 2" in text


def test_json_keeps_every_count_and_validates() -> None:
    report = _report()
    data = session(storm(), prevention=report).to_dict()
    assert schema_errors(data) == []
    (row,) = data["prevention"]["functions"]
    assert (row["traces_without"], row["traces_with"], row["traces_fixed"], row["traces_minimum"]) == (7, 2, 3, 1)
    assert row["changes"] and row["not_warmed"] and data["prevention"]["learned"] == 2
    again = Session.from_dict(json.loads(json.dumps(data)), "s.json")
    assert again.prevention == report


def test_html_shows_the_prevention_table() -> None:
    page = HtmlRenderer().render(session(storm(), prevention=_report()))
    section = page[page.index('id="prevention"'):page.index("</section>")]
    cells = [cell.split("</td>")[0] for cell in section.split('<td class="num">')[1:]]
    assert cells[:4] == ["7", "2", "3", "1"]
    assert "random-stream" in section


def test_verify_compares_a_prevented_function_from_its_count_as_written(tmp_path: object) -> None:
    from dataclasses import replace

    from sessions import healthy
    from tfretrace.fix.applying.verify import _compare

    # Prevention kept train_step at one trace; its plan (as written) is what --verify checks.
    warmed = replace(healthy("train_step", "train.py:8"), plan=({"cause": "shape-changed", "kind": "input-signature",
                                                                  "summary": "s", "traces_before": 7,
                                                                  "traces_after": 3, "edits": []},))
    before = session(warmed, prevention=_report())
    after = session(replace(healthy("train_step", "train.py:9"), traces=3))
    (outcome,) = _compare(before, after, tmp_path)  # type: ignore[arg-type]
    assert (outcome.traces_before, outcome.traces_after) == (7, 3)
