"""Renderers of a comparison of two runs: terminal (rich), JSON, markdown, GitHub annotations."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from tfretrace._util.text import plural
from tfretrace.compare.comparison import NEW, VANISHED, Comparison, Delta, NewCause
from tfretrace.records.function_key import EDITED, EXACT, HOISTED, MOVED
from tfretrace.render import _model
from tfretrace.render._md import code
from tfretrace.render.text import TextRenderer

__all__ = ["FORMATS", "reason_line", "render_comparisons"]

FORMATS = ("text", "json", "markdown", "github")

# What the match column says: how the head's function was found in the base run.
_MATCH_WORDS = {EXACT: "same", MOVED: "moved file", HOISTED: "moved by fix", EDITED: "edited", NEW: "new",
                VANISHED: "vanished"}


def render_comparisons(comparisons: Sequence[Comparison], fmt: str, width: int = 100, color: bool = False) -> str:
    """All comparisons (one per head run) in one of FORMATS."""
    if fmt == "json":
        data = [c.to_dict() for c in comparisons]
        return json.dumps({"comparisons": data, "worse": sum(len(c.worse) for c in comparisons)}, indent=2) + "\n"
    safe = [_model.printable_copy(c) for c in comparisons]
    if fmt == "markdown":
        return "\n".join(markdown(c) for c in safe)
    if fmt == "github":
        return "".join(github(c) for c in safe)
    if fmt == "text":
        renderer = TextRenderer(width=width, color=color)
        blocks: list[RenderableType] = []
        for number, comparison in enumerate(safe):
            if number:
                blocks.append(Text(""))  # one paragraph per head run
            blocks.extend(text_blocks(comparison))
        return renderer.print(blocks).rstrip() + "\n"
    raise ValueError(f"unknown format {fmt!r}")


def headline(comparison: Comparison, quote: Callable[[str], str] = str) -> str:
    """``2 functions got worse, 1 new, 0 vanished; TensorFlow 2.21.0 -> 2.23.0`` (versions through ``quote``)."""
    worse = len(comparison.worse)
    lead = f"{plural(worse, 'function')} got worse" if worse else "no function got worse"
    tail = f"{len(comparison.new)} new, {len(comparison.vanished)} vanished"
    versions = "; ".join(f"{what} {quote(str(base))} -> {quote(str(head))}"
                         for what, base, head in comparison.version_changes())
    tolerance = f" (tolerance {comparison.tolerance})" if comparison.tolerance else ""
    return f"{lead}{tolerance}, {tail}" + (f"; {versions}" if versions else "")


def match_word(delta: Delta, quote: Callable[[str], str] = str) -> str:
    """The match column: how the function was found in the base run, and where it was if it moved."""
    word = _MATCH_WORDS.get(delta.how, delta.how)
    moved = delta.base is not None and delta.head is not None and delta.base.location != delta.head.location
    if moved and delta.base is not None and delta.base.location:
        word += f" (was {quote(delta.base.location)})"
    return word


def by_cause(delta: Delta, quote: Callable[[str], str] = str) -> str:
    """Retraces per cause, base -> head, for the causes either run has: ``shape-changed 0 -> 3``."""
    base = dict(delta.base.causes) if delta.base is not None else {}
    head = dict(delta.head.causes) if delta.head is not None else {}
    cells = []
    for cause in sorted(set(base) | set(head), key=lambda c: (-(head.get(c, 0) - base.get(c, 0)), c)):
        before, after = base.get(cause, 0), head.get(cause, 0)
        cells.append(f"{quote(cause)} {after}" if before == after else f"{quote(cause)} {before} -> {after}")
    return ", ".join(cells)


def _pair(values: tuple[int, int]) -> str:
    base, head = values
    if base == head:
        return str(head)
    return f"{base} -> {head} ({head - base:+d})"


def _seconds(delta: Delta) -> str:
    base, head = delta.seconds
    if base is None and head is None:
        return "-"
    shown = [f"{v:.2f}" if v is not None else "-" for v in (base, head)]
    return shown[1] if shown[0] == shown[1] else f"{shown[0]} -> {shown[1]}"


def _verdict(delta: Delta) -> str:
    if delta.worse:
        return "worse"
    if delta.how == VANISHED:
        return ""
    base, head = delta.retraces
    return "better" if head < base else ""


def reason_line(cause: NewCause, quote: Callable[[str], str] = str, strong: Callable[[str], str] = str) -> str:
    """``shape-changed +3: x: shape (32, 10) -> (8, 10), dim 0, first at trace 3, called at prog.py:40``.

    ``quote`` wraps recorded text (a markdown code span), ``strong`` the cause.
    """
    line = f"{strong(cause.cause)} +{cause.added}"
    change = cause.change()
    if change is not None:
        line += f": {quote(change.line())}"
    if cause.trace is not None:
        line += f", first at trace {cause.trace}"
    if cause.call_site:
        line += f", called at {quote(cause.call_site)}"
    return line


def _shown(comparison: Comparison) -> list[Delta]:
    # Unchanged functions are counted in the title, not listed: a review reads what changed.
    return [d for d in comparison.deltas if d.changed or d.worse]


def text_blocks(comparison: Comparison) -> list[RenderableType]:
    """The terminal form: title, table of changed functions, then why each worse one got worse."""
    title = Text("tfretrace compare: ", style="bold")
    title.append(f"{comparison.base.label} -> {comparison.head.label}")
    blocks: list[RenderableType] = [title, Text(headline(comparison), style="red" if comparison.worse else "green")]
    shown = _shown(comparison)
    if not shown:
        blocks.append(Text(f"{plural(len(comparison.deltas), 'function')}, all unchanged.", style="dim"))
        return blocks
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for header, justify in (("function", "left"), ("match", "left"), ("traces", "right"), ("retraces", "right"),
                            ("seconds", "right"), ("XLA compiles", "right"), ("", "left")):
        # Names and places wrap whole (fold), never cut to an ellipsis.
        table.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for delta in shown:
        verdict = _verdict(delta)
        table.add_row(
            f"{delta.name} ({delta.location})" if delta.location else delta.name,
            match_word(delta),
            _pair(delta.traces), _pair(delta.retraces), _seconds(delta), _pair(delta.xla_compiles),
            Text(verdict, style="bold red" if verdict == "worse" else "green"),
        )
    blocks.append(table)
    causes = [(delta.name, by_cause(delta)) for delta in shown if by_cause(delta)]
    if causes:
        blocks.append(Text("\nRetraces by cause:", style="bold"))
        blocks.extend(Text(f"  {name}: {cells}") for name, cells in causes)
    for delta in comparison.worse:
        blocks.append(Text(f"\nWhy {delta.name} got worse:", style="bold"))
        for cause in delta.new_causes:
            blocks.append(Text(f"  {reason_line(cause)}"))
        if not delta.new_causes:
            blocks.append(Text(f"  retraces {_pair(delta.retraces)}, XLA compiles {_pair(delta.xla_compiles)}"))
    unchanged = len(comparison.deltas) - len(shown)
    if unchanged:
        blocks.append(Text(f"\n{plural(unchanged, 'function')} unchanged.", style="dim"))
    return blocks


def _md(text: str) -> str:
    """Code span for a recorded string (render._md.code): nothing in it can break out or render.

    Every string a session or baseline holds (names, places, versions, causes, values) goes
    through here: inside a code span GitHub renders no link, image, HTML tag or @mention.
    """
    return code(text)


def markdown(comparison: Comparison) -> str:
    """A table a CI job can post on a pull request."""
    lines = [
        f"### tfretrace compare: {_md(comparison.base.label)} → {_md(comparison.head.label)}",
        "",
        f"**{headline(comparison, _md).replace(' -> ', ' → ')}**",
        "",
    ]
    shown = _shown(comparison)
    if shown:
        lines += ["| function | match | traces | retraces | by cause | seconds | XLA compiles | |",
                  "|---|---|--:|--:|---|--:|--:|---|"]
        for delta in shown:
            where = f" {_md(delta.location)}" if delta.location else ""
            verdict = _verdict(delta)
            lines.append(
                f"| {_md(delta.name)}{where} | {match_word(delta, _md)} | "
                f"{_arrow(_pair(delta.traces))} | {_arrow(_pair(delta.retraces))} | "
                f"{_arrow(by_cause(delta, _md))} | {_arrow(_seconds(delta))} | "
                f"{_arrow(_pair(delta.xla_compiles))} | {'**worse**' if verdict == 'worse' else verdict} |"
            )
        lines.append("")
    for delta in comparison.worse:
        lines.append(f"**Why {_md(delta.name)} got worse**")
        lines.append("")
        for cause in delta.new_causes:
            lines.append(f"- {reason_line(cause, _md, lambda text: f'**{_md(text)}**')}")
        if not delta.new_causes:
            compiles = _arrow(_pair(delta.xla_compiles))
            lines.append(f"- retraces {_arrow(_pair(delta.retraces))}, XLA compiles {compiles}")
        lines.append("")
    unchanged = len(comparison.deltas) - len(shown)
    if unchanged:
        lines += [f"{plural(unchanged, 'function')} unchanged.", ""]
    return "\n".join(lines)


def _arrow(text: str) -> str:
    return text.replace(" -> ", " → ")


def _gh_data(text: str) -> str:
    # GitHub's workflow command escapes: a message may not hold a raw %, CR or LF.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github(comparison: Comparison) -> str:
    """Workflow annotations: an error at the call site of each new cause of each worse function."""
    lines = []
    for delta in comparison.worse:
        reasons = delta.new_causes or (None,)
        for cause in reasons:
            site = (cause.call_site if cause is not None else None) or delta.location
            path, _, line = site.rpartition(":")
            where = f"file={_gh_property(path)},line={line}," if path and line.isdigit() else ""
            title = f"tfretrace: {delta.name} retraces more"
            message = (reason_line(cause) if cause is not None
                       else f"retraces {_pair(delta.retraces)}, XLA compiles {_pair(delta.xla_compiles)}")
            lines.append(f"::error {where}title={_gh_property(title)}::{_gh_data(message)}")
    summary = f"tfretrace compare {comparison.base.label} -> {comparison.head.label}: {headline(comparison)}"
    lines.append(f"::{'error' if comparison.worse else 'notice'} title=tfretrace compare::{_gh_data(summary)}")
    return "\n".join(lines) + "\n"
