"""The terminal report: summary line, ranked table, then each retracing function explained."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tfretrace.events import FunctionReport, TraceEvent
from tfretrace.render import _model
from tfretrace.session import Session

# Terminal width from which the location gets its own table column.
WIDE = 110
_CAUSE_STYLE = {"first-trace": "dim", "variable-creation": "dim"}


class TextRenderer:
    """Render a session for a terminal; width and colour are arguments so tests can pin them."""

    name = "text"
    extension = ".txt"

    def __init__(self, width: int = 100, color: bool = False, keep: int = _model.RUN_KEEP) -> None:
        self.width = max(40, width)
        self.color = color
        self.keep = keep

    def render(self, session: Session) -> str:
        """The whole report as one string (ANSI codes only when ``color`` is set)."""
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=self.width,
            force_terminal=self.color,
            color_system="256" if self.color else None,
            no_color=not self.color,
            # User-derived strings (function names, reprs) must never be read as rich markup.
            markup=False,
            highlight=False,
            emoji=False,
            soft_wrap=False,
        )
        for block in self.blocks(session):
            console.print(block)
        # rich pads lines to the width; trailing blanks only get in the way of diffs and pipes.
        return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))

    def blocks(self, session: Session) -> list[RenderableType]:
        """The report's renderables in order; each is one paragraph of the output."""
        title = Text("tfretrace: ", style="bold")
        title.append(_model.summary_line(session))
        blocks: list[RenderableType] = [title]
        blocks.extend(self.warnings(session))
        if not session.functions:
            blocks.append(Text("No tf.function was traced.", style="dim"))
            return blocks
        blocks.append(self.table(session))
        for report in _model.retracing_functions(session):
            blocks.append(self.function(report, session))
        if not session.total_retraces:
            blocks.append(Text("No function retraced: every trace was expected.", style="green"))
        return blocks

    def warnings(self, session: Session) -> list[RenderableType]:
        """Internal errors of the monitor and session notes (worker divergence, hidden rows)."""
        out: list[RenderableType] = []
        if session.internal_errors:
            line = Text(
                f"tfretrace hit {session.internal_errors} internal error(s); "
                "the report may be incomplete.",
                style="bold yellow",
            )
            out.append(line)
            for message in session.internal_error_messages[:5]:
                out.append(_indent(Text(message, style="yellow"), 2))
        for note in session.notes:
            out.append(Text(f"note: {note}", style="yellow"))
        return out

    def table(self, session: Session) -> Table:
        """The ranked table: costliest tracing first.

        Below ``WIDE`` columns the location moves under the name, so names stay readable.
        """
        wide = self.width >= WIDE
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, header_style="bold", expand=False)
        table.add_column("function" if wide else "function / location", overflow="fold",
                         min_width=12)
        if wide:
            table.add_column("location", overflow="fold", style="dim", min_width=12)
        table.add_column("calls", justify="right", no_wrap=True)
        table.add_column("traces", justify="right", no_wrap=True)
        table.add_column("trace s", justify="right", no_wrap=True)
        table.add_column("% wall", justify="right", no_wrap=True)
        table.add_column("main cause", no_wrap=True)
        for report in _model.ranked_functions(session):
            retracing = report.retraces > 0
            name = Text(_model.label(report), style="bold" if retracing else "")
            cells: list[Text] = [name]
            if wide:
                cells.append(Text(report.location))
            else:
                name.append("\n" + report.location, style="dim not bold")
            cells += [
                Text(str(report.calls)),
                Text(str(report.traces), style="bold red" if retracing else ""),
                Text(f"{report.trace_seconds:.3f}"),
                Text(_model.fmt_share(_model.share_of_wall(report, session))),
                Text(report.main_cause or "-", style="red" if retracing else "dim"),
            ]
            table.add_row(*cells)
        return table

    def function(self, report: FunctionReport, session: Session) -> RenderableType:
        """One retracing function: header, its events (runs folded), then why and how to fix."""
        parts: list[RenderableType] = [
            Rule(Text(_model.label(report), style="bold"), align="left", style="dim")
        ]
        where = Text(report.location, style="dim")
        if report.keras is not None:
            where.append("  " + _model.keras_line(report.keras), style="cyan")
        parts.append(where)
        stats = (
            f"{report.calls} calls, {report.traces} traces ({_model.plural(report.retraces, 'retrace')}), "
            f"{_model.fmt_seconds(report.trace_seconds)} tracing "
            f"({_model.fmt_share(_model.share_of_wall(report, session))} of wall)"
        )
        if report.objects > 1:
            stats += f", {report.objects} tf.function objects"
        parts.append(Text(stats))
        for extra in _function_extras(report):
            parts.append(Text(extra, style="yellow"))
        fixes = _model.fixes_to_show(report)
        groups, cut = _model.group_events(report.events, keep=self.keep)
        for group in groups:
            for event in group.shown:
                parts.extend(self.event(event, fixes.get(event.index)))
            if group.hidden:
                parts.append(_indent(Text(group.hidden_line(), style="dim"), 2))
        if cut:
            parts.append(
                _indent(Text(f"… {cut} later events not listed", style="dim"), 2)
            )
        for cause in _model.causes_of(report):
            why = Text(f"Why ({cause.slug}, {cause.code}): ", style="bold")
            why.append(cause.why, style="")
            fix = Text("Fix: ", style="bold green")
            fix.append(cause.fix)
            see = Text(f"See: tfretrace explain {cause.slug}", style="dim")
            parts.append(_indent(Group(why, fix, see), 2))
        return Group(Text(""), *parts)

    def event(self, event: TraceEvent, fix: str | None) -> list[RenderableType]:
        """One trace event: its line, the changed leaves, notes and the fix code if new."""
        style = _CAUSE_STYLE.get(event.cause, "bold red")
        line = Text("  ")
        head, _, tail = _model.event_line(event).partition("  ")
        line.append(head, style=style)
        if tail:
            line.append("  " + tail)
        out: list[RenderableType] = [line]
        for change in event.changes:
            out.append(_indent(Text(change.line()), 6))
        for note in _model.event_notes(event):
            out.append(_indent(Text(note, style="dim"), 6))
        if fix:
            out.append(_indent(Text("fix:", style="bold green"), 6))
            out.append(_indent(self.code(fix), 8))
        return out

    def code(self, source: str) -> RenderableType:
        """Fix code: highlighted in colour, plain otherwise; never wrapped, so it pastes as is."""
        if self.color:
            text = Syntax(source, "python", theme="ansi_dark", background_color="default").highlight(source)
            text.rstrip()
        else:
            text = Text(source)
        text.no_wrap = True
        text.overflow = "ignore"
        return text


def _indent(renderable: RenderableType, spaces: int) -> Padding:
    """Indent without padding lines out to the full width."""
    return Padding(renderable, (0, 0, 0, spaces), expand=False)


def _function_extras(report: FunctionReport) -> list[str]:
    """Lines about what the monitor could not record for this function."""
    extras = []
    if report.failed_traces:
        extras.append(f"{report.failed_traces} trace(s) raised an exception")
    if report.dropped_events:
        extras.append(f"{report.dropped_events} trace event(s) were not recorded (event cap)")
    return extras
