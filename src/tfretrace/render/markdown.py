"""The markdown report: summary, ranked table, then each retracing function with its plan and causes."""

from __future__ import annotations

from tfretrace._util.text import plural
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.plan_view import plan_steps
from tfretrace.records.session import Session
from tfretrace.render import _model
from tfretrace.render._md import code
from tfretrace.render._md import text as _escaped

_FENCE = "```"


def text(value: str) -> str:
    """Escaped running text, ``a -> b`` as an arrow (a ``>`` would need escaping to stay text)."""
    return _escaped(value.replace(" -> ", " → "))


class MarkdownRenderer:
    """Render a session as markdown (a pull request comment, a CI summary); recorded strings escaped."""

    name = "markdown"
    extension = ".md"

    def render(self, session: Session) -> str:
        """The whole report as markdown text."""
        lines = [f"### tfretrace: {text(_model.summary_line(session))}", ""]
        lines += [f"> note: {text(note)}" for note in session.notes]
        if not session.functions:
            return "\n".join([*lines, "No tf.function was traced.", ""])
        lines += ["| function | location | calls | traces | trace s | % wall | main cause |",
                  "|---|---|--:|--:|--:|--:|---|"]
        for report in _model.ranked_functions(session):
            lines.append(
                f"| {code(_model.label(report))} | {code(report.location)} | {report.calls} | {report.traces} | "
                f"{report.trace_seconds:.3f} | {_model.fmt_share(_model.share_of_wall(report, session))} | "
                f"{code(report.main_cause) if report.main_cause else '-'} |"
            )
        lines.append("")
        retracing = _model.retracing_functions(session)
        for report in retracing:
            lines += self.function(report)
        if not retracing:
            lines += ["No function retraced: every trace was expected.", ""]
        return "\n".join(lines)

    def function(self, report: FunctionReport) -> list[str]:
        """One retracing function: its counts, fix plan (code fenced) and the causes' fixes."""
        lines = [f"#### {code(_model.label(report))} at {code(report.location)}", "",
                 f"{plural(report.calls, 'call')}, {plural(report.traces, 'trace')} "
                 f"({plural(report.retraces, 'retrace')}), "
                 f"{_model.fmt_seconds(report.trace_seconds)} tracing", ""]
        steps = plan_steps(report)
        if steps:
            lines += [f"**{text(_model.plan_headline(steps))}**", ""]
            for number, step in _model.numbered_steps(steps):
                lines.append(f"{number}. {text(_model.step_line(number, step).partition('. ')[2])}"
                             if step.kind != "statement" else f"- {text(_model.step_line(number, step))}")
                if step.code:
                    lines += ["", *_fenced(step.code, "   "), ""]
            lines.append("")
        for cause in _model.causes_of(report):
            lines.append(f"- **{text(cause.slug)}** ({cause.code}): {text(cause.fix)}")
        lines.append("")
        return lines


def _fenced(source: str, indent: str) -> list[str]:
    """A fenced python block whose fence no line of the code can close."""
    fence = _FENCE
    while fence in source:
        fence += "`"
    return [f"{indent}{fence}python", *(f"{indent}{line}" for line in source.splitlines()), f"{indent}{fence}"]
