"""HTML for notebooks: a session or a function as the full HTML report in a frame, and a cell's retraces."""

from __future__ import annotations

import html
from dataclasses import dataclass

from tfretrace._util.text import plural
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.plan_view import StepView, plan_steps
from tfretrace.records.session import Session
from tfretrace.render import _model
from tfretrace.render.html import HtmlRenderer

# Tall enough for the summary, the table and a first timeline; the reader can drag it taller.
FRAME_HEIGHT = 640


def report_frame(session: Session) -> str:
    """The complete HTML report inside an ``<iframe srcdoc>``: the same page ``-o report.html`` writes.

    The page keeps its own Content-Security-Policy (no network, only its own script) and its
    styles cannot leak into the notebook; ``sandbox`` lets only its script run, in a frame of
    its own origin. Every recorded string is escaped twice: by the report's template, and as
    the ``srcdoc`` attribute value.
    """
    page = HtmlRenderer().render(session)
    return (
        f'<iframe class="tfretrace-report" sandbox="allow-scripts" title="tfretrace report" '
        f'style="width:100%;height:{FRAME_HEIGHT}px;border:1px solid #e5e7eb;resize:vertical" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )


def function_session(report: FunctionReport) -> Session:
    """A session holding one function, for showing that function alone."""
    return Session(functions=(report,), wall_seconds=0.0)


@dataclass(frozen=True)
class CellRetraces:
    """What one notebook cell retraced: per function, its report and the events of this cell."""

    functions: tuple[tuple[FunctionReport, tuple[TraceEvent, ...]], ...]

    @property
    def retraces(self) -> int:
        """Retraces made by this cell, all functions together."""
        return sum(1 for _, events in self.functions for e in events if e.is_retrace)

    def text(self) -> str:
        """The compact report as plain text (terminal IPython, and the HTML's text fallback)."""
        lines = [f"tfretrace: this cell retraced {plural(self.retraces, 'time')}"]
        for report, events in self.functions:
            lines.append(f"  {_model.label(report)} ({report.location}): {self._causes(events)}")
            for event in [e for e in events if e.is_retrace][:3]:
                lines.append(f"    {_model.event_line(event)}")
                lines.extend(f"      {change.line()}" for change in event.changes[:3])
            step = self._first_step(report, events)
            if step is not None:
                lines.append(f"    fix: {_model.step_line(1, step)}")
                if step.code:
                    lines.extend(f"      {line}" for line in step.code.splitlines())
        return "\n".join(_model.printable_copy(lines))

    def html(self) -> str:
        """The compact report as an HTML fragment, every recorded string escaped."""
        esc = html.escape
        parts = [
            '<div class="tfretrace-cell" style="border-left:3px solid #dc2626;padding:4px 10px;'
            'margin:4px 0;font:13px/1.45 system-ui,sans-serif">',
            f"<strong>tfretrace: this cell retraced {plural(self.retraces, 'time')}</strong>",
        ]
        for report, events in self.functions:
            parts.append(
                f'<div style="margin-top:6px"><code><b>{esc(_model.label(report))}</b></code> '
                f'<span style="color:#6b7280">{esc(report.location)}</span>: {esc(self._causes(events))}</div>'
                '<ul style="margin:2px 0;padding-left:18px">'
            )
            for event in [e for e in events if e.is_retrace][:3]:
                changes = "".join(
                    f"<br><code>{esc(change.line())}</code>" for change in event.changes[:3]
                )
                parts.append(f"<li><code>{esc(_model.event_line(event))}</code>{changes}</li>")
            parts.append("</ul>")
            step = self._first_step(report, events)
            if step is not None:
                parts.append(
                    f'<div style="color:#15803d"><b>fix:</b> {esc(_model.step_line(1, step))}</div>'
                )
                if step.code:
                    parts.append(
                        '<pre style="background:#f9fafb;padding:6px;margin:2px 0">'
                        f"<code>{esc(step.code)}</code></pre>"
                    )
        parts.append("</div>")
        return "".join(parts)

    @staticmethod
    def _causes(events: tuple[TraceEvent, ...]) -> str:
        counts: dict[str, int] = {}
        for event in events:
            if event.is_retrace:
                counts[event.cause] = counts.get(event.cause, 0) + 1
        return ", ".join(f"{cause} x{n}" if n > 1 else cause for cause, n in counts.items())

    @staticmethod
    def _first_step(report: FunctionReport, events: tuple[TraceEvent, ...]) -> StepView | None:
        """The plan's first step for a cause this cell's retraces had (a cell that only passed a
        new Python value gets the tensor step, not the function's shape step); else its first."""
        steps = [s for s in plan_steps(report) if s.kind != "statement"]
        causes = {e.cause for e in events if e.is_retrace}
        matching = [s for s in steps if s.cause in causes]
        chosen = matching or steps
        return chosen[0] if chosen else None
