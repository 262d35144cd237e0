"""The terminal report: summary line, ranked table, then each retracing function explained."""

from __future__ import annotations

import io
from collections.abc import Iterable

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.rule import Rule
from rich.segment import Segment
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tfretrace._util.text import plural
from tfretrace.fix.plan import plan_steps
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session
from tfretrace.render import _model

# Terminal width from which the location gets its own table column.
WIDE = 110
MAX_WIDTH = 1000
_CAUSE_STYLE = {"first-trace": "dim", "variable-creation": "dim"}


class TextRenderer:
    """Render a session for a terminal; width and colour are arguments so tests can pin them."""

    name = "text"
    extension = ".txt"

    def __init__(self, width: int = 100, color: bool = False, keep: int = _model.RUN_KEEP) -> None:
        # Rules and padding fill the width: COLUMNS=10000000 must not build 50 MB of dashes.
        self.width = min(max(40, width), MAX_WIDTH)
        self.color = color
        self.keep = keep

    def render(self, session: Session) -> str:
        """The whole report as one string (ANSI codes only when ``color`` is set)."""
        return self.print(self.blocks(_model.printable_copy(session)))

    def print(self, blocks: list[RenderableType]) -> str:
        """Renderables as text at this width and colour."""
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=self.width,
            force_terminal=self.color,
            # Inside Jupyter rich would display each block itself and leave the buffer empty.
            force_jupyter=False,
            color_system="256" if self.color else None,
            no_color=not self.color,
            # User-derived strings (function names, reprs) must never be read as rich markup.
            markup=False,
            highlight=False,
            emoji=False,
            soft_wrap=False,
            # Width and colour are this renderer's arguments; rich would otherwise also read
            # COLUMNS/LINES itself, and crash on COLUMNS=² (str.isdigit() accepts it, int() not).
            _environ={},
        )
        for block in blocks:
            # Nothing is ever cropped: prose wraps at spaces, code and long words run long.
            console.print(block, crop=False)
        # rich pads lines to the width; trailing blanks only get in the way of diffs and pipes.
        return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))

    def blocks(self, session: Session) -> list[RenderableType]:
        """The report's renderables in order; each is one paragraph of the output."""
        title = _prose("tfretrace: ", "bold")
        title.append(_model.summary_line(session))
        blocks: list[RenderableType] = [title]
        blocks.extend(self.warnings(session))
        if not session.functions:
            blocks.append(Text("No tf.function was traced.", style="dim"))
            return blocks
        blocks.append(self.table(session))
        for report in _model.retracing_functions(session):
            blocks.append(self.function(report, session))
        refused = [f for f in session.functions if f.refused_traces]
        for report in refused:
            blocks.append(_prose(
                f"{report.display_name()}: {report.refused_traces} trace(s) refused by a budget or "
                "strict mode (TensorFlow did not trace them)", "bold yellow",
            ))
        if not session.total_retraces and not refused:
            blocks.append(Text("No function retraced: every trace was expected.", style="green"))
        if any(_model.xla_recompiles(f) for f in session.functions):
            blocks.append(_prose("XLA recompiled for new shapes: see the XLA events above.", "yellow"))
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
                out.append(_indent(_prose(message, "yellow"), 2, hang=2))
        for note in session.notes:
            out.append(_prose(f"note: {note}", "yellow"))
        return out

    def table(self, session: Session) -> RenderableType:
        """The ranked table: costliest tracing first.

        Below ``WIDE`` columns the location moves under the name, so names stay readable.
        """
        wide = self.width >= WIDE
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, header_style="bold", expand=False)
        table.add_column("function" if wide else "function / location", no_wrap=True,
                         overflow="ignore")
        if wide:
            table.add_column("location", no_wrap=True, overflow="ignore", style="dim")
        table.add_column("calls", justify="right", no_wrap=True)
        table.add_column("traces", justify="right", no_wrap=True)
        table.add_column("trace s", justify="right", no_wrap=True)
        table.add_column("% wall", justify="right", no_wrap=True)
        xla = any(f.xla_compiles for f in session.functions)
        if xla:  # only runs that compiled with XLA get the columns
            table.add_column("XLA compiles", justify="right", no_wrap=True)
            table.add_column("compile s", justify="right", no_wrap=True)
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
            ]
            if xla:
                recompiling = _model.xla_recompiles(report) > 0
                cells += [
                    Text(str(report.xla_compiles), style="bold red" if recompiling else ""),
                    Text(f"{report.xla_compile_seconds:.3f}"),
                ]
            main = report.main_cause
            cells.append(Text(main or "-", style="red" if main else "dim"))
            table.add_row(*cells)
        return _Natural(table)

    def function(self, report: FunctionReport, session: Session) -> RenderableType:
        """One retracing function: header, its events (runs folded), then why and how to fix."""
        parts: list[RenderableType] = [
            Rule(Text(_model.label(report), style="bold"), align="left", style="dim")
        ]
        where = _prose(report.location, "dim")
        if report.keras is not None:
            where.append("  " + _model.keras_line(report.keras), style="cyan")
        parts.append(where)
        stats = (
            f"{plural(report.calls, 'call')}, {plural(report.traces, 'trace')} "
            f"({plural(report.retraces, 'retrace')}), "
            f"{_model.fmt_seconds(report.trace_seconds)} tracing "
            f"({_model.fmt_share(_model.share_of_wall(report, session))} of wall)"
        )
        if report.objects > 1:
            stats += f", {report.objects} tf.function objects"
        if report.xla_compiles:
            stats += ", " + _model.xla_stats(report)
        parts.append(_prose(stats))
        for extra in _function_extras(report):
            parts.append(_prose(extra, "yellow"))
        if report.megamorphic:
            parts.append(_prose(_model.megamorphic_line(report), "bold yellow"))
        parts.extend(self.plan(report))
        fixes = _model.fixes_to_show(report)
        groups, cut = _model.group_events(report.events, keep=self.keep)
        for group in groups:
            for event in group.shown:
                parts.extend(self.event(event, fixes.get(event.index)))
            if group.hidden:
                parts.append(_indent(_prose(group.hidden_line(), "dim"), 2, hang=2))
        if cut:
            parts.append(
                _indent(_prose(f"… {cut} later events not listed", "dim"), 2)
            )
        parts.extend(self.xla_events(report))
        for cause in _model.causes_of(report):
            why = _prose(f"Why ({cause.slug}, {cause.code}): ", "bold")
            why.append(cause.why, style="")
            fix = _prose("Fix: ", "bold green")
            fix.append(cause.fix)
            see = _prose(f"See: tfretrace explain {cause.slug}", "dim")
            parts.extend(_indent(block, 2, hang=2) for block in (why, fix, see))
        return Group(Text(""), *parts)

    def xla_events(self, report: FunctionReport) -> list[RenderableType]:
        """The XLA recompiles with what changed (first compiles only counted), runs folded."""
        out: list[RenderableType] = []
        recompiles = _model.recompile_events(report)
        for number, event in enumerate(recompiles):
            if number >= _model.MAX_SHOWN:
                more = len(recompiles) - number
                out.append(_indent(_prose(f"… {more} more XLA recompiles not listed", "dim"), 2))
                break
            out.append(_indent(_prose(_model.xla_event_line(event), "red"), 2, hang=2))
            for change in event.changes:
                out.append(_indent(_prose(change.line()), 6, hang=2))
        return out

    def plan(self, report: FunctionReport) -> list[RenderableType]:
        """The function's fix plan: headline, then each step with its code and where it edits."""
        steps = plan_steps(report)
        if not steps:
            return []
        out: list[RenderableType] = [_indent(_prose(_model.plan_headline(steps), "bold green"), 2, hang=2)]
        for number, step in _model.numbered_steps(steps):
            line = _model.step_line(number, step)
            style = "yellow" if step.kind == "statement" else ""
            out.append(_indent(_prose(line, style), 4, hang=_hang_of(line)))
            if step.code:
                out.append(_indent(self.code(step.code), 8))
            where = _model.step_where(step)
            if where:
                out.append(_indent(_prose(where, "dim"), 8, hang=2))
        return out

    def event(self, event: TraceEvent, fix: str | None) -> list[RenderableType]:
        """One trace event: its line, the changed leaves, notes and the fix code if new."""
        style = _CAUSE_STYLE.get(event.cause, "bold red")
        line = _prose("")
        head, _, tail = _model.event_line(event).partition("  ")
        line.append(head, style=style)
        if tail:
            line.append("  " + tail)
        out: list[RenderableType] = [_indent(line, 2, hang=4)]
        for change in event.changes:
            out.append(_indent(_prose(change.line()), 6, hang=2))
        for note in _model.event_notes(event):
            out.append(_indent(_prose(note, "dim"), 6, hang=2))
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


def render_plans(session: Session, width: int = 100, color: bool = False) -> str:
    """Only the fix plans of the retracing functions (``tfretrace run --fix-plan``)."""
    renderer = TextRenderer(width=width, color=color)
    session = _model.printable_copy(session)
    blocks: list[RenderableType] = [
        Text("Fix plans: each step checked against every call of this run", style="bold")
    ]
    for report in _model.retracing_functions(session):
        steps = renderer.plan(report)
        if steps:
            title = Text(_model.label(report), style="bold")
            title.append(f"  {report.location}", style="dim")
            blocks.append(Group(title, *steps))
    if len(blocks) == 1:
        blocks.append(Text("No fix plan: nothing retraced that a fix would remove.", style="dim"))
    return renderer.print(blocks)


def _prose(text: str, style: str = "") -> Text:
    """Text that wraps at spaces only: a ``file:line`` or a long word moves whole, never cut."""
    return _Prose(text, style=style)


class _Prose(Text):
    """Text wrapped at spaces; a word longer than the width runs long instead of being cut.

    rich folds such a word mid-way (``overflow='fold'``) or stops wrapping at all
    (``'ignore'``); neither is right for a sentence that names ``examples/train.py:74``.
    """

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        for paragraph in self.split("\n", allow_blank=True):
            for line in paragraph.divide(_breaks(paragraph.plain, options.max_width)):
                line.rstrip()
                yield from line.render(console)
                yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        words = self.plain.split()
        longest = max((len(word) for word in words), default=0)
        return Measurement(longest, max((len(line) for line in self.plain.split("\n")), default=0))


def _breaks(plain: str, width: int) -> list[int]:
    """Offsets where a greedy word wrap at ``width`` starts each new line (after a space)."""
    breaks: list[int] = []
    start = 0
    last_space = -1
    for i, char in enumerate(plain):
        if char == " ":
            last_space = i
        elif i - start >= width and last_space >= start:
            start = last_space + 1
            breaks.append(start)
    return breaks


def _hang_of(line: str) -> int:
    """The hanging indent that lines wrapped lines up after a step number (``1. ``)."""
    number, dot, _ = line.partition(". ")
    return len(number) + 2 if dot and number.isdigit() else 2


def _indent(renderable: RenderableType, spaces: int, hang: int = 0) -> _Indented:
    """Indent ``spaces`` columns; lines wrapped from one line indent ``hang`` more."""
    return _Indented(renderable, spaces, hang)


class _Indented:
    """An indented block that, unlike rich's Padding, never crops a line that runs long."""

    def __init__(self, renderable: RenderableType, spaces: int, hang: int) -> None:
        self.renderable = renderable
        self.spaces = spaces
        self.hang = hang

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update(width=max(20, options.max_width - self.spaces - self.hang))
        # split_lines, not render_lines: the latter crops every line to the width.
        lines = Segment.split_lines(console.render(self.renderable, inner))
        for number, line in enumerate(lines):
            # Lines wrapped from the first sit `hang` columns further right.
            yield Segment(" " * (self.spaces + (self.hang if number else 0)))
            yield from line
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = Measurement.get(console, options, self.renderable)
        return Measurement(width.minimum + self.spaces, width.maximum + self.spaces + self.hang)


class _Natural:
    """A table laid out at the width it needs when that is more than the terminal has."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        wide = options.update(width=Measurement.get(console, options.update(width=MAX_WIDTH), self.table).maximum)
        yield from console.render(self.table, wide if wide.max_width > options.max_width else options)


def _function_extras(report: FunctionReport) -> list[str]:
    """Lines about what the monitor could not record for this function."""
    extras = []
    if report.failed_traces:
        extras.append(f"{report.failed_traces} trace(s) raised an exception")
    if report.refused_traces:
        extras.append(f"{report.refused_traces} trace(s) refused by a budget")
    if report.earlier_traces:
        extras.append(
            f"{report.earlier_traces} of the traces were made before the monitor met it "
            "(read from TensorFlow's cache: no call site or cost)"
        )
    if report.dropped_events:
        extras.append(f"{report.dropped_events} trace event(s) were not recorded (event cap)")
    return extras
