"""Text, JSON and HTML reports agree; merged workers' shares of wall are each worker's own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import sessions as S
from tfretrace.cli import app as cli
from tfretrace.records.session import load, merge
from tfretrace.records.xla_events import RECOMPILE
from tfretrace.render import HtmlRenderer, JsonRenderer, TextRenderer


def test_an_xla_only_function_has_one_main_cause_in_every_format() -> None:
    session = S.session(S.xla_only())
    assert session.functions[0].main_cause == RECOMPILE
    data = json.loads(JsonRenderer().render(session))
    assert data["functions"][0]["main_cause"] == RECOMPILE
    assert [row.main_cause for row in session.summary()] == [RECOMPILE]
    table = TextRenderer(width=160, verbose=True).render(session)
    assert re.search(r"predict_batch .* xla-recompile\s*$", table, re.MULTILINE), table
    html = HtmlRenderer().render(session)
    assert '<span class="cause" title="' in html and f">{RECOMPILE}</span></td>" in html


def _workers() -> tuple[object, object]:
    # One slow worker (100 s wall) beside a fast one (10 s): each traced 8 s.
    fast = S.session(S.healthy("step"), label="fast", wall_seconds=10.0)
    slow = S.session(S.healthy("step"), label="slow", wall_seconds=100.0)
    return (fast, slow)


def test_merged_share_of_wall_divides_each_workers_time_by_its_own_wall(tmp_path: Path) -> None:
    fast, slow = _workers()
    merged = merge([fast, slow])  # type: ignore[list-item]
    shares = {row.worker: row.share_of_wall for row in merged.summary()}
    assert shares == {"fast": pytest.approx(0.15 / 10.0), "slow": pytest.approx(0.15 / 100.0)}
    # The headline: all tracing over all workers' wall, never over one worker's.
    text = TextRenderer(width=160).render(merged)
    assert "(0.3% of 110 s, 2 workers)" in text.splitlines()[0], text.splitlines()[0]
    # The per-worker walls survive a save and a load of the merged session.
    path = tmp_path / "merged.json"
    merged.save(path)
    again = {row.worker: row.share_of_wall for row in load(path).summary()}
    assert again == shares


def test_merging_the_same_file_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.json"
    S.worker_session("worker0", 3).save(a)
    copy = tmp_path / "copy.json"
    copy.write_bytes(a.read_bytes())
    for second in (str(a), str(tmp_path / "." / "a.json"), str(copy)):
        assert cli.main(["report", str(a), second]) == cli.EXIT_USAGE
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("tfretrace: error:"), err
