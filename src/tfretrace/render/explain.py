"""One catalogue entry as ``tfretrace explain`` and ``tfretrace lint --explain`` show it (one renderer)."""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tfretrace.records.catalogue import Cause

# Prose reads best at this width, however wide the terminal is.
WIDTH = 88


def explanation_renderable(entry: Cause, color: bool = False) -> RenderableType:
    """Title, kind, why and fix (wrapped with a hanging indent by rich), then the bad and good code."""
    title = Text.assemble((f"{entry.code} {entry.slug}", "bold"), f": {entry.title}")
    parts: list[RenderableType] = [_one_line(title), Text()]
    if entry.kind != "runtime" and entry.cause:
        parts += [_one_line(Text(f"Kind: {entry.kind} rule; at run time this shows up as {entry.cause}.")), Text()]
    prose = Table.grid(padding=(0, 1, 0, 0))
    prose.add_column(no_wrap=True, style="bold")
    prose.add_column()
    prose.add_row("Why:", entry.why)
    prose.add_row("Fix:", entry.fix)
    parts.append(prose)
    for heading, code in (("Bad", entry.bad), ("Good", entry.good)):
        if code:
            shown: RenderableType = (
                Syntax(code, "python", theme="ansi_dark", background_color="default") if color else Text(code)
            )
            parts += [Text(), Text(f"{heading}:", style="bold"), Padding(shown, (0, 0, 0, 4))]
    return Group(*parts)


def _one_line(text: Text) -> Text:
    """A line that stays whole (``grep``-able) however narrow the width: never wrapped nor cut."""
    text.no_wrap, text.overflow = True, "ignore"
    return text


def explanation(entry: Cause, width: int = WIDTH, color: bool = False) -> str:
    """The explanation as text (ANSI codes only with ``color``), trailing blanks trimmed."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="256" if color else None,
                      no_color=not color, highlight=False, emoji=False, markup=False, _environ={})
    console.print(explanation_renderable(entry, color), crop=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").split("\n"))
