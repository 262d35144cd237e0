"""The HTML report: one self-contained, offline file with the table, timelines and fixes."""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup, escape

from tfretrace._util.version import __version__
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.plan_view import plan_steps
from tfretrace.records.session import Session
from tfretrace.render import _model
from tfretrace.render._stories import fix_lines, stories
from tfretrace.render.timeline import timeline_svg


class HtmlRenderer:
    """Render a session as one HTML page that needs no network and no other file."""

    name = "html"
    extension = ".html"

    def render(self, session: Session) -> str:
        """The page; every user-derived string is escaped by the template's autoescape."""
        script = _asset("report.js")
        # Only our own script may run, even if an escaping bug let markup through: the
        # Content-Security-Policy allows exactly this script's hash and no network at all.
        digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
        csp = (
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
            f"script-src 'sha256-{digest}'"
        )
        ranked = _model.ranked_functions(session)
        # One shared time axis, so that timelines of different functions line up.
        start = min((e.time for f in session.functions for e in f.events), default=0.0)
        views = [_function_view(i, f, session, start) for i, f in enumerate(ranked)]
        index = [
            {
                "id": view["id"],
                "name": view["label"],
                "location": view["location"],
                "retracing": view["retracing"],
            }
            for view in views
        ]
        return _environment().get_template("report.html.j2").render(
            session=session,
            summary=_model.summary_line(session),
            functions=views,
            retracing=sum(1 for v in views if v["retracing"]),
            xla=any(f.xla_compiles for f in session.functions),
            data_json=Markup(json_for_script({"functions": index})),
            script=Markup(script),
            css=Markup(_asset("report.css")),
            csp=csp,
            tool_version=session.tool_version or __version__,
            lint=_lint(session),
        )


def json_for_script(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``.

    A function name containing ``</script>`` would otherwise end the element early.
    """
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


@cache
def _environment() -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(resources.files("tfretrace.render") / "templates"))
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["breakable"] = breakable
    return env


def breakable(text: str, separator: str = "/") -> Markup:
    """Escaped text a narrow page may wrap after ``separator`` only (never inside ``file:line``).

    Locations break after a ``/``; qualified names (``Trainer.<locals>.step``) after a ``.``.
    """
    return Markup(f"{separator}<wbr>").join(escape(part) for part in str(text).split(separator))


def _lint(session: Session) -> dict[str, Any] | None:
    """The lint panel the analysis stage saved in the session (the files are not read here)."""
    panel = session.lint
    if panel is None:
        return None
    return {
        **panel.to_dict(),
        "confirmed": panel.confirmed,
        "unpredicted": [
            {"where": u.where, "functions": u.functions, "retraces": u.retraces,
             "seconds": f"{u.seconds:.3f} s", "causes": u.causes}
            for u in panel.unpredicted
        ],
    }


@cache
def _asset(name: str) -> str:
    return (resources.files("tfretrace.render") / "templates" / name).read_text(encoding="utf-8")


def _function_view(
    number: int, report: FunctionReport, session: Session, start: float
) -> dict[str, Any]:
    """What the template shows for one function, computed here so the template stays dumb."""
    fixes = _model.fixes_to_show(report)
    groups, cut = _model.group_events(report.events)
    steps = plan_steps(report)
    plan = []
    for step_number, step in _model.numbered_steps(steps):
        plan.append({
            "line": _model.step_line(step_number, step),
            "code": step.code,
            "where": _model.step_where(step),
            "statement": step.kind == "statement",
        })
    return {
        # The grouped view first (as the terminal prints it); the details below it are folded.
        "stories": [story.line() for story in stories(report)],
        "fix_lines": [
            {"headline": fix.headline(), "code": fix.code, "trailer": fix.trailer, "safety": fix.safety}
            for fix in fix_lines(report, asked=session.probe_traces is not None)
        ],
        "plan": plan,
        "plan_headline": _model.plan_headline(steps) if steps else "",
        "id": f"fn-{number}",
        "label": _model.label(report),
        "location": report.location,
        "keras": None if report.keras is None else _model.keras_line(report.keras),
        "calls": report.calls,
        "traces": report.traces,
        "retraces": report.retraces,
        "retracing": report.retraces > 0,
        "recompiles": _model.xla_recompiles(report),
        "objects": report.objects,
        "trace_seconds": report.trace_seconds,
        "trace_time": _model.fmt_seconds(report.trace_seconds),
        "share": _model.share_of_wall(report, session),
        "share_text": _model.fmt_share(_model.share_of_wall(report, session)),
        "main_cause": report.main_cause,
        "main_cause_title": _model.cause_title(report.main_cause) if report.main_cause else "",
        "failed_traces": report.failed_traces,
        "xla_compiles": report.xla_compiles,
        "xla_compile_seconds": report.xla_compile_seconds,
        "xla_stats": _model.xla_stats(report),
        "megamorphic": _model.megamorphic_line(report),
        "xla_events": [
            {"line": _model.xla_event_line(e), "changes": [c.line() for c in e.changes]}
            for e in _model.recompile_events(report)
        ][: _model.MAX_SHOWN],
        "refused_traces": report.refused_traces,
        "dropped_events": report.dropped_events,
        "svg": timeline_svg(report, session.wall_of(report.worker), start),
        "groups": [
            {
                "events": [_event_view(e, fixes.get(e.index)) for e in group.shown],
                "hidden_line": group.hidden_line(),
            }
            for group in groups
        ],
        "cut": cut,
        "causes": _model.causes_of(report),
    }


def _event_view(event: TraceEvent, fix: str | None) -> dict[str, Any]:
    return {
        "index": event.index,
        "cause": event.cause,
        "expected": not event.is_retrace,
        "seconds": _model.fmt_seconds(event.seconds),
        "call_site": event.call_site,
        "calls_since_previous": event.calls_since_previous,
        "time": f"{event.time:.3f} s",
        "changes": [c.line() for c in event.changes],
        "notes": _model.event_notes(event),
        "fix": fix,
    }
