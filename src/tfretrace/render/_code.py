"""Fix code at the terminal's width: long lines broken where Python allows it, so it still pastes."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

_OPEN, _CLOSE = "([{", ")]}"
# A continuation line sits this much deeper than the line it continues.
_HANG = 4


def fit(source: str, width: int) -> str:
    """``source`` with each line longer than ``width`` broken inside its brackets (after a comma,
    before a comprehension's ``for``), a trailing comment moved above it.

    Only breaks Python reads the same way are made: the result parses to the same code. A line
    that cannot be broken so (a string longer than the width, no brackets) runs long.
    """
    out: list[str] = []
    inside = _string_lines(source)
    for number, line in enumerate(source.split("\n"), 1):
        # A line of a string spanning lines (a docstring) is the string's text: a break there
        # would change the code printed, so it runs long.
        if len(line) <= width or number in inside:
            out.append(line)
            continue
        for piece in _fit_line(line, width):
            out.extend(_wrap_comment(piece, width) if piece.lstrip().startswith("#") else [piece])
    return "\n".join(out)


def _string_lines(source: str) -> set[int]:
    """The numbers (from 1) of the lines a string literal spans where it spans more than one."""
    lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                lines.update(range(token.start[0], token.end[0] + 1))
        return lines
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    # Not a whole program (a fragment of one): follow the triple quotes line by line.
    quote: str | None = None
    for number, line in enumerate(source.split("\n"), 1):
        if quote is not None:
            lines.add(number)
        for mark in ('"""', "\'\'\'"):
            if quote in (None, mark) and line.count(mark) % 2:
                quote = mark if quote is None else None
                lines.add(number)
    return lines


def _wrap_comment(line: str, width: int) -> list[str]:
    """A comment line wider than ``width`` wrapped at spaces into comment lines at its indent.

    Python reads the same code (comments are no code), so the wrapped advice still pastes; a
    word longer than the width runs long.
    """
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    words = line.lstrip()[1:].split()
    lines: list[str] = []
    current = indent + "#"
    for word in words:
        if len(current) + 1 + len(word) > width and current.strip() != "#":
            lines.append(current)
            current = indent + "#"
        current += " " + word
    lines.append(current)
    return lines


def _fit_line(line: str, width: int) -> list[str]:
    tokens = _tokens(line)
    if tokens is None:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    lines: list[str] = []
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    if comment is not None and line[: comment.start[1]].strip():
        # A comment after code goes on its own line above, at the code's indent.
        lines.append(indent + comment.string)
        line = line[: comment.start[1]].rstrip()
        if len(line) <= width:
            return [*lines, line]
    cuts = _cuts(tokens, len(line))
    start, prefix = 0, ""
    while len(prefix) + len(line) - start > width:
        room = width - len(prefix)
        fitting = [c for c in cuts if start < c and c - start <= room]
        later = [c for c in cuts if c > start]
        if not later:
            break
        cut = fitting[-1] if fitting else later[0]
        lines.append(prefix + line[start:cut].rstrip())
        start = cut
        while start < len(line) and line[start] == " ":
            start += 1
        prefix = indent + " " * _HANG
    lines.append(prefix + line[start:])
    return lines


def _tokens(line: str) -> list[tokenize.TokenInfo] | None:
    """The line's tokens, or None when it is not a whole line of Python on its own."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    # f-strings before 3.12 cannot be broken inside their braces; leave such lines alone.
    if any(tokenize.tok_name[t.type].startswith("FSTRING") for t in tokens):
        return None
    shift = len(line) - len(line.lstrip())
    return [t._replace(start=(t.start[0], t.start[1] + shift), end=(t.end[0], t.end[1] + shift)) for t in tokens]


def _cuts(tokens: list[tokenize.TokenInfo], end: int) -> list[int]:
    """Columns where a line may be broken: inside brackets, after a comma or before ``for``/``if``."""
    cuts: list[int] = []
    depth = 0
    for token in tokens:
        if token.start[1] >= end:
            break
        if token.type == tokenize.OP and token.string in _OPEN:
            depth += 1
        elif token.type == tokenize.OP and token.string in _CLOSE:
            depth -= 1
        elif depth > 0 and token.type == tokenize.OP and token.string == ",":
            cuts.append(token.end[1])
        elif depth > 0 and token.type == tokenize.NAME and token.string in ("for", "if"):
            cuts.append(token.start[1])
    return cuts


class Code:
    """Fix code laid out at the width it is given: broken by :func:`fit`, never wrapped or cut."""

    def __init__(self, source: str, color: bool) -> None:
        self.source = source
        self.color = color

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        source = fit(self.source, options.max_width)
        if self.color:
            # Loaded here: rich.syntax brings pygments and its lexer tables, needed only in colour.
            from rich.syntax import Syntax

            text = Syntax(source, "python", theme="ansi_dark", background_color="default").highlight(source)
            text.rstrip()
        else:
            text = Text(source)
        text.no_wrap = True
        text.overflow = "ignore"
        yield from console.render(text, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        longest = max((len(line) for line in self.source.split("\n")), default=0)
        return Measurement(min(longest, options.max_width), longest)
