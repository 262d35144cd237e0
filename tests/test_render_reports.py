"""Renderer tests on hand-built sessions: every renderer renders every session, plus structure."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

import sessions as S
import tfretrace
from tfretrace.records.session import Session
from tfretrace.render import (
    HtmlRenderer,
    JsonRenderer,
    TextRenderer,
    UnknownFormatError,
    _model,
    extensions,
    render,
    renderer_for,
)
from tfretrace.render.html import json_for_script

RENDERERS = [TextRenderer(width=100), TextRenderer(width=60, color=True), JsonRenderer(),
             HtmlRenderer()]


@pytest.mark.parametrize("renderer", RENDERERS, ids=lambda r: f"{r.name}")
@pytest.mark.parametrize("make", S.SESSIONS.values(), ids=list(S.SESSIONS))
def test_every_renderer_renders_every_session(
    renderer: TextRenderer | JsonRenderer | HtmlRenderer, make: Callable[[], Session]
) -> None:
    out = renderer.render(make())
    assert isinstance(out, str) and out.strip()


@pytest.mark.parametrize(
    ("name", "expected"),
    [("report.html", HtmlRenderer), ("x.HTM", HtmlRenderer), (".json", JsonRenderer),
     ("json", JsonRenderer), ("out/report.txt", TextRenderer), ("text", TextRenderer)],
)
def test_renderer_for_picks_by_extension(name: str, expected: type) -> None:
    assert isinstance(renderer_for(name), expected)


def test_unknown_extension_is_one_line_error() -> None:
    with pytest.raises(UnknownFormatError) as info:
        renderer_for("report.pdf")
    assert "\n" not in str(info.value) and ".html" in str(info.value)
    assert extensions() == [".txt", ".json", ".html", ".md"]


# -- JSON ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", S.SESSIONS.values(), ids=list(S.SESSIONS))
def test_json_round_trips_through_load(make: Callable[[], Session], tmp_path: Path) -> None:
    session = make()
    path = tmp_path / "s.json"
    path.write_text(render(session, "json"), encoding="utf-8")
    again = tfretrace.load(path)
    assert again.to_dict() == session.to_dict()


def test_json_has_the_documented_top_level_fields() -> None:
    data = json.loads(render(S.mixed_session(), ".json"))
    for key in ("schema", "tool", "tensorflow", "keras", "python", "wall_seconds", "functions"):
        assert key in data
    assert data["schema"] == 1 and data["tool"]["name"] == "tfretrace"
    fn = data["functions"][0]
    for key in ("name", "location", "calls", "traces", "trace_seconds", "objects", "keras",
                "events"):
        assert key in fn
    ev = fn["events"][1]
    for key in ("index", "cause", "seconds", "call_site", "signature", "changes", "fix"):
        assert key in ev
    assert set(ev["changes"][0]) >= {"path", "kind", "before", "after"}


# -- text ----------------------------------------------------------------------------------------


def test_text_has_summary_rows_and_causes() -> None:
    out = TextRenderer(width=140, verbose=True).render(S.mixed_session())
    assert out.startswith("tfretrace: 6 functions, 136 traces (129 retraces)")
    for name in ("train_step", "encoder.predict", "Trainer.step", "eval_step", "future_fn"):
        assert name in out
    for slug in ("shape-changed", "python-value-changed", "keras-new-model", "object-identity"):
        assert f"Why ({slug}," in out
    assert "model 'encoder' (Functional, built at app.py:40) predict" in out
    assert "#2 shape-changed  12.0 ms  at train.py:41 (calls since previous: 1)" in out
    assert "x: shape (8, 10) -> (8, 11), dim 1" in out
    assert "compared with #1 (equally close: #2)" in out
    assert "internal error" in out and "traces diverge across workers" in out
    assert "\x1b[" not in out  # no colour unless asked


def test_text_ranks_costliest_first() -> None:
    out = TextRenderer(width=140, verbose=True).render(S.mixed_session())
    table = out.split("\n\n")[1] if "\n\n" in out else out
    assert table.index("train_step") < table.index("eval_step") < table.index("future_fn")


def test_text_folds_a_storm() -> None:
    out = TextRenderer(width=100, verbose=True).render(S.storm_session())
    assert "… 996 more shape-changed like this (#5–#1000)" in out
    assert out.count("shape-changed  12.0 ms") == 3
    assert len(out.splitlines()) < 60
    assert out.count("@tf.function(input_signature") == 1  # the same fix is shown once


def test_text_does_not_interpret_markup() -> None:
    assert S.HOSTILE_MARKUP in TextRenderer(width=70, verbose=True).render(S.mixed_session())


@pytest.mark.parametrize("width", [40, 70, 100])
def test_text_wraps_prose_and_never_cuts_code_or_locations(width: int) -> None:
    session = S.mixed_session()
    out = TextRenderer(width=width, verbose=True).render(session)
    lines = out.splitlines()
    code = {line.strip() for f in session.functions for e in f.events if e.fix for line in e.fix.splitlines()}
    head = next(i for i, line in enumerate(lines) if "trace s" in line)
    table = lines[head - 1 : lines.index("", head)]
    # Its figures alone (calls, traces, seconds, share) need this much: below it the table runs long.
    figures_fit = width >= 60
    for line in lines:
        if len(line) > width:  # no prose past the width; the table only when its figures cannot fit,
            # code only where Python allows no break (a long string)
            in_code = any(line.strip() in c for c in code)
            assert (line in table and not figures_fit) or in_code or " " not in line.strip(), line
    squeezed = "".join("".join(lines).split())
    for report in session.functions:
        assert "".join(report.location.split()) in "".join("".join(table).split())  # folded, never cut
        if report.retraces:
            assert report.location in " ".join(lines)  # its section names it whole
        for event in report.events:
            if event.call_site and report.retraces:
                assert f"at {event.call_site}" in " ".join(lines)  # the location moves whole, never split
            for line in (event.fix or "").splitlines():
                # Broken where Python allows, never cut: the same code (a trailing comment moves above).
                for part in line.split("  # "):
                    assert "".join(part.split()) in squeezed


def test_text_colour_only_when_asked() -> None:
    assert "\x1b[" in TextRenderer(width=100, color=True).render(S.mixed_session())


def test_text_of_empty_and_healthy_sessions() -> None:
    assert "No tf.function was traced." in TextRenderer().render(S.empty_session())
    assert "No function retraced" in TextRenderer().render(S.healthy_session())


# -- shared helpers ------------------------------------------------------------------------------


def test_group_events_folds_runs_and_caps() -> None:
    groups, cut = _model.group_events(S.storm(10).events, keep=3)
    assert [len(g.shown) for g in groups] == [1, 3]
    assert len(groups[1].hidden) == 6 and cut == 0
    groups, cut = _model.group_events(S.epochs().events, keep=1, limit=2)
    assert sum(len(g.shown) for g in groups) == 2 and cut == 4


def test_hide_below_notes_what_it_hid() -> None:
    view = _model.hide_below(S.mixed_session(), 4)
    assert {f.name for f in view.functions} == {"train_step", "Trainer.step",
                                                "one_step_on_data_distributed"}
    assert view.notes[-1] == "3 functions with fewer than 4 traces hidden (--min-traces)"
    assert _model.hide_below(S.mixed_session(), 1) == S.mixed_session()


# -- HTML ----------------------------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[str] = []
        self.svgs = 0
        self.sections: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[str] = []
        self.imgs = 0
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "data-fn" in a:
            self.rows.append(a["data-fn"] or "")
        if tag == "svg":
            self.svgs += 1
        if tag == "section":
            self.sections.append(a.get("id") or "")
        if tag == "script":
            self.scripts.append(a)
        if tag == "img":
            self.imgs += 1
        self.handlers += [k for k in a if k.startswith("on")]
        for key in ("src", "href"):
            value = a.get(key) or ""
            if value.startswith(("http:", "https:", "//")):
                self.external.append(value)


def _parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    return collector


def test_html_structure() -> None:
    session = S.mixed_session()
    html = HtmlRenderer().render(session)
    page = _parse(html)
    assert len(page.rows) == len(session.functions) == 6
    assert page.svgs == len(session.functions)  # one timeline per function
    assert page.sections == page.rows
    assert page.external == []  # opens offline
    assert "<pre><code>@tf.function(input_signature" in html
    assert "Content-Security-Policy" in html


def test_html_escapes_hostile_strings() -> None:
    html = HtmlRenderer().render(S.mixed_session())
    page = _parse(html)
    # Only our own two script elements, no injected element or event handler.
    assert len(page.scripts) == 2 and page.imgs == 0 and page.handlers == []
    assert "<script>alert" not in html and "<script>window.__pwned" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned=1" in html


def test_html_embedded_data_is_json_without_markup() -> None:
    html = HtmlRenderer().render(S.mixed_session())
    start = html.index('<script type="application/json" id="tfretrace-data">') + 52
    blob = html[start:html.index("</script>", start)]
    assert "<" not in blob and ">" not in blob
    names = [f["name"] for f in json.loads(blob)["functions"]]
    assert S.HOSTILE_JS_NAME in names


def test_json_for_script_escapes_closing_tags() -> None:
    text = json_for_script({"a": "</script><b>&"})
    assert "</" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><b>&"}


def test_html_of_empty_session_has_no_table() -> None:
    html = HtmlRenderer().render(S.empty_session())
    assert "No tf.function was traced." in html and 'id="ranking"' not in html


def test_timeline_calls_line_of_a_late_function_starts_at_its_first_trace() -> None:
    import dataclasses
    import re

    from tfretrace.render.timeline import timeline_svg

    late = dataclasses.replace(
        S.storm(4), events=tuple(dataclasses.replace(e, time=e.time + 8.0) for e in S.storm(4).events)
    )
    svg = str(timeline_svg(late, wall_seconds=10.0))
    match = re.search(r'<polyline class="calls" points="([^"]+)"', svg)
    assert match is not None
    points = [tuple(map(float, p.split(","))) for p in match.group(1).split()]
    (x0, y0), (x1, y1), (x2, y2) = points[:3]
    assert y0 == y1 and x1 > x0  # flat at zero calls from the start of the axis ...
    assert x2 == x1 and y2 < y1  # ... until the first trace, then straight up


def test_html_headers_are_buttons_with_aria_sort_and_locations_break_after_slashes() -> None:
    html = HtmlRenderer().render(S.mixed_session())
    page = _parse(html)
    assert html.count('aria-sort="none"><button type="button">') == 7
    assert "keras/<wbr>src/<wbr>backend/<wbr>tensorflow/<wbr>trainer.py:219" in html
    assert "word-break: break-all" not in html
    assert page.svgs == len(S.mixed_session().functions)
