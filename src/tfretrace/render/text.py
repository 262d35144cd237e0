"""The terminal report: summary line, ranked table, then each retracing function explained."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from tfretrace._util.text import plural
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.plan_view import plan_steps
from tfretrace.records.session import Session
from tfretrace.render import _grouped, _model
from tfretrace.render._code import Code
from tfretrace.render._grouped import function_extras
from tfretrace.render._layout import Indented, Prose, hang_of, indent, prose

# Terminal width from which the location gets its own table column.
WIDE = 110
MAX_WIDTH = 1000
# The name and location columns fold down to this many characters before the table runs wide.
_NAME_MIN = 16
_CAUSE_STYLE = {"first-trace": "dim", "variable-creation": "dim"}


class TextRenderer:
    """Render a session for a terminal; width and colour are arguments so tests can pin them."""

    name = "text"
    extension = ".txt"

    def __init__(self, width: int = 100, color: bool = False, keep: int = _model.RUN_KEEP, *,
                 plans: bool = True, saved: bool = True, verbose: bool = False) -> None:
        # Rules and padding fill the width: COLUMNS=10000000 must not build 50 MB of dashes.
        self.width = min(max(40, width), MAX_WIDTH)
        self.color = color
        self.keep = keep
        # plans=False: each function's section leaves its plan out (``run --fix-plan`` prints them
        # all after the report, once). saved=False: no session to apply a plan from.
        self.plans = plans
        self.saved = saved
        # verbose: every trace event, the long plan and each cause's Why/Fix (``-v``); else the
        # grouped view, one line per story and one per fix step.
        self.verbose = verbose

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
            # rich's print joins top-level Text blocks into a plain Text, which would wrap a
            # _Prose mid-figure: render it through its own wrapping instead.
            if isinstance(block, Prose):
                block = Indented(block, 0, 0)
            # Nothing is ever cropped: prose wraps at spaces, code and long words run long.
            console.print(block, crop=False)
        # rich pads lines to the width; trailing blanks only get in the way of diffs and pipes.
        return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))

    def summary(self, session: Session) -> str:
        """The report's first paragraph alone: ``tfretrace: 4 functions, 40 traces ...``."""
        return self.print([self.title(_model.printable_copy(session))]).rstrip("\n")

    def title(self, session: Session) -> Text:
        """The one-line summary (wrapped at the width)."""
        title = prose("tfretrace: ", "bold")
        title.append(_model.summary_line(session))
        return title

    def blocks(self, session: Session) -> list[RenderableType]:
        """The report's renderables in order; each is one paragraph of the output."""
        blocks: list[RenderableType] = [self.title(session)]
        blocks.extend(self.warnings(session))
        if not session.functions:
            blocks.append(Text("No tf.function was traced.", style="dim"))
            return blocks
        retracing = _model.retracing_functions(session)
        if self.verbose or not retracing or len(retracing) > _grouped.TABLE_ABOVE:
            blocks.append(self.table(session))
        for report in retracing:
            if self.verbose:
                blocks.append(self.function(report, session))
            else:
                blocks.append(_grouped.function_block(report, session, self.width, self.color))
        refused = [f for f in session.functions if f.refused_traces]
        for report in refused:
            blocks.append(prose(
                f"{report.display_name()}: {report.refused_traces} trace(s) refused by a budget or "
                "strict mode (TensorFlow did not trace them)", "bold yellow",
            ))
        if not session.total_retraces and not refused and (self.verbose or not retracing):
            blocks.append(Text("No function retraced: every trace was expected.", style="green"))
        if not self.verbose:
            if retracing:
                blocks.extend(_grouped.footer(session, self.width))
            return blocks
        if any(_model.xla_recompiles(f) for f in session.functions):
            blocks.append(prose("XLA recompiled for new shapes: see the XLA events above.", "yellow"))
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
                out.append(indent(prose(message, "yellow"), 2, hang=2))
        for note in (*session.notes, *_model.analysis_notes(session)):
            out.append(prose(f"note: {note}", "yellow"))
        return out

    def table(self, session: Session) -> RenderableType:
        """The ranked table: costliest tracing first, never wider than the terminal.

        Below ``WIDE`` columns the location moves under the name, and when the main cause does not
        fit as a column too it moves under the location. Names and locations fold (a long Keras
        path must not set the table's width); the figures are never wrapped or cut.
        """
        xla = any(f.xla_compiles for f in session.functions)
        # The first layout that fits unfolded wins; else the first whose names fold to fit.
        layouts = [(False, True), (False, False)]
        if self.width >= WIDE:
            layouts.insert(0, (True, True))
        for wide, cause_column in layouts:
            table = self._table(session, wide, xla, cause_column)
            if _widths(table)[1] <= self.width:
                return table
        for cause_column in (True, False):
            # Measured with the name column at its narrowest, then given what the figures leave.
            least = _widths(self._table(session, False, xla, cause_column, _NAME_MIN))[0]
            if least <= self.width:
                # Names break where their parts join (never mid-word, as rich's fold would):
                # the widest name column whose broken names let the table fit.
                for name_width in range(_NAME_MIN + self.width - least, _NAME_MIN - 1, -1):
                    table = self._table(session, False, xla, cause_column, name_width)
                    if _widths(table)[1] <= self.width:
                        return table
        table = self._table(session, False, xla, False, _NAME_MIN)
        return _Natural(table)

    def _table(self, session: Session, wide: bool, xla: bool, cause_column: bool,
               name_width: int | None = None) -> Table:
        # collapse_padding: one space each side of a column boundary, not two, so 80 columns hold it.
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, header_style="bold",
                      expand=False)
        first = "function" if wide else "function / location"
        if not cause_column:
            first += " / cause"
        table.add_column(first, overflow="fold", min_width=_NAME_MIN, max_width=name_width)
        if wide:
            table.add_column("location", overflow="fold", style="dim", min_width=_NAME_MIN)
        table.add_column("calls", justify="right", no_wrap=True)
        table.add_column("traces", justify="right", no_wrap=True)
        table.add_column("trace s", justify="right", no_wrap=True)
        table.add_column("% wall", justify="right", no_wrap=True)
        if xla:  # only runs that compiled with XLA get the columns
            table.add_column("XLA compiles" if wide else "XLA\ncompiles", justify="right", no_wrap=True)
            table.add_column("compile s", justify="right", no_wrap=True)
        if cause_column:
            table.add_column("main cause", overflow="fold")
        for report in _model.ranked_functions(session):
            retracing = report.retraces > 0
            name = Text(_break_name(_model.label(report), name_width), style="bold" if retracing else "")
            cells: list[Text] = [name]
            if wide:
                cells.append(Text(report.location))
            else:
                name.append("\n" + _break_name(report.location, name_width, "/"), style="dim not bold")
            # A cause only where something retraced or recompiled: a prevented run's plan still
            # names the cause it prevented, which did not happen in this run.
            main = report.main_cause if retracing or _model.xla_recompiles(report) else None
            if not cause_column:
                name.append("\n" + (main or "-"), style="red not bold" if main else "dim not bold")
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
            if cause_column:
                cells.append(Text(main or "-", style="red" if main else "dim"))
            table.add_row(*cells)
        return table

    def function(self, report: FunctionReport, session: Session) -> RenderableType:
        """One retracing function: header, its events (runs folded), then why and how to fix."""
        parts: list[RenderableType] = [
            Rule(Text(_model.label(report), style="bold"), align="left", style="dim")
        ]
        where = prose(report.location, "dim")
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
        parts.append(prose(stats))
        for extra in function_extras(report):
            parts.append(prose(extra, "yellow"))
        if report.megamorphic:
            parts.append(prose(_model.megamorphic_line(report), "bold yellow"))
        if self.plans:
            parts.extend(self.plan(report))
        fixes = _model.fixes_to_show(report)
        groups, cut = _model.group_events(report.events, keep=self.keep)
        for group in groups:
            for event in group.shown:
                parts.extend(self.event(event, fixes.get(event.index)))
            if group.hidden:
                parts.append(indent(prose(group.hidden_line(), "dim"), 2, hang=2))
        if cut:
            parts.append(
                indent(prose(f"… {cut} later events not listed", "dim"), 2)
            )
        parts.extend(self.xla_events(report))
        for cause in _model.causes_of(report):
            why = prose(f"Why ({cause.slug}, {cause.code}): ", "bold")
            why.append(cause.why, style="")
            fix = prose("Fix: ", "bold green")
            fix.append(cause.fix)
            see = prose(f"See: tfretrace explain {cause.slug}", "dim")
            parts.extend(indent(block, 2, hang=2) for block in (why, fix, see))
        return Group(Text(""), *parts)

    def xla_events(self, report: FunctionReport) -> list[RenderableType]:
        """The XLA recompiles with what changed (first compiles only counted), runs folded."""
        out: list[RenderableType] = []
        recompiles = _model.recompile_events(report)
        for number, event in enumerate(recompiles):
            if number >= _model.MAX_SHOWN:
                more = len(recompiles) - number
                out.append(indent(prose(f"… {more} more XLA recompiles not listed", "dim"), 2))
                break
            out.append(indent(prose(_model.xla_event_line(event), "red"), 2, hang=2))
            for change in event.changes:
                out.append(indent(prose(change.line()), 6, hang=2))
        return out

    def plan(self, report: FunctionReport) -> list[RenderableType]:
        """The function's fix plan: headline, then each step with its code and where it edits."""
        steps = plan_steps(report)
        if not steps:
            return []
        out: list[RenderableType] = [indent(prose(_model.plan_headline(steps, self.saved), "bold green"), 2, hang=2)]
        for number, step in _model.numbered_steps(steps):
            line = _model.step_line(number, step)
            style = "yellow" if step.kind == "statement" else ""
            out.append(indent(prose(line, style), 4, hang=hang_of(line)))
            if step.code:
                out.append(indent(self.code(step.code), 8))
            where = _model.step_where(step)
            if where:
                out.append(indent(prose(where, "dim"), 8, hang=2))
        return out

    def event(self, event: TraceEvent, fix: str | None) -> list[RenderableType]:
        """One trace event: its line, the changed leaves, notes and the fix code if new."""
        style = _CAUSE_STYLE.get(event.cause, "bold red")
        line = prose("")
        head, _, tail = _model.event_line(event).partition("  ")
        line.append(head, style=style)
        if tail:
            line.append("  " + tail)
        out: list[RenderableType] = [indent(line, 2, hang=4)]
        for change in event.changes:
            out.append(indent(prose(change.line()), 6, hang=2))
        for note in _model.event_notes(event):
            out.append(indent(prose(note, "dim"), 6, hang=2))
        if fix:
            out.append(indent(Text("fix:", style="bold green"), 6))
            out.append(indent(self.code(fix), 8))
        return out

    def code(self, source: str) -> RenderableType:
        """Fix code: highlighted in colour; long lines broken where Python allows, so it pastes as is."""
        return Code(source, self.color)


def render_plans(session: Session, width: int = 100, color: bool = False, saved: bool = True) -> str:
    """Only the fix plans of the retracing functions (``tfretrace run --fix-plan``)."""
    renderer = TextRenderer(width=width, color=color, saved=saved)
    session = _model.printable_copy(session)
    blocks: list[RenderableType] = [
        Text("Fix plans: each step checked against every call of this run", style="bold")
    ]
    # A prevented run's function may not have retraced, yet its plan (of the program as written) edits.
    planned = [f for f in _model.ranked_functions(session) if f in _model.retracing_functions(session) or f.plan]
    for report in planned:
        steps = renderer.plan(report)
        if steps:
            title = Text(_model.label(report), style="bold")
            title.append(f"  {report.location}", style="dim")
            blocks.append(Group(title, *steps))
    if len(blocks) == 1:
        blocks.append(Text("No fix plan: nothing retraced that a fix would remove.", style="dim"))
    return renderer.print(blocks)


def _widths(table: Table) -> tuple[int, int]:
    """The narrowest the table can be (names folded, figures whole) and its width unfolded."""
    console = Console(width=MAX_WIDTH, _environ={})
    measured = Measurement.get(console, console.options, table)
    return measured.minimum, measured.maximum


class _Natural:
    """A table laid out at its narrowest when even that is more than the terminal has (never cropped)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        least = Measurement.get(console, options.update(width=MAX_WIDTH), self.table).minimum
        yield from console.render(self.table, options.update(width=least) if least > options.max_width else options)


def _break_name(name: str, width: int | None, marks: str = "./>") -> str:
    """``evaluate.<locals>.batch_error`` broken after one of ``marks`` to fit ``width``.

    rich folds a long word at the column's edge (``batch_e`` / ``rror``); a name broken where
    its parts join still reads as the name. A part longer than the width is left to rich's fold.
    """
    if width is None or len(name) <= width:
        return name
    lines, line, part = [], "", ""
    for char in name:
        part += char
        if char in marks:
            if line and len(line) + len(part) > width:
                lines.append(line)
                line = ""
            line += part
            part = ""
    if line and len(line) + len(part) > width:
        lines.append(line)
        line = ""
    lines.append(line + part)
    return "\n".join(lines)
