"""Prose and indentation for the terminal report: wrapped at spaces, figures whole, never cropped."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text


def prose(text: str, style: str = "") -> Text:
    """Text that wraps at spaces only: a ``file:line`` or a long word moves whole, never cut."""
    return Prose(text, style=style)


class Prose(Text):
    """Text wrapped at spaces; a word longer than the width runs long instead of being cut.

    rich folds such a word mid-way (``overflow='fold'``) or stops wrapping at all
    (``'ignore'``); neither is right for a sentence that names ``examples/train.py:74``.
    """

    # Columns the first line of each paragraph may use beyond the width (an Indented block's hang:
    # its wrapped lines sit that much further right, its first line does not).
    first_extra = 0

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        for paragraph in self.split("\n", allow_blank=True):
            breaks = _breaks(paragraph.plain, options.max_width, first=options.max_width + self.first_extra)
            for line in paragraph.divide(breaks):
                line.rstrip()
                yield from line.render(console)
                yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        words = self.plain.split()
        longest = max((len(word) for word in words), default=0)
        return Measurement(longest, max((len(line) for line in self.plain.split("\n")), default=0))


def _breaks(plain: str, width: int, first: int | None = None) -> list[int]:
    """Offsets where a greedy word wrap at ``width`` starts each new line (after a space).

    ``first``: the first line's width, where it differs. A figure stays whole: no break next to a
    number (``1.08 s``, ``dim 1``) or around an arrow (``24 -> 8 traces``).
    """
    breaks: list[int] = []
    start = 0
    last_space = -1
    for i, char in enumerate(plain):
        if char == " " and _breakable(plain, i):
            last_space = i
        elif i - start >= (width if breaks or first is None else first) and last_space >= start:
            start = last_space + 1
            breaks.append(start)
    return breaks


def _breakable(plain: str, i: int) -> bool:
    """Whether the space at ``i`` may end a line: not inside a figure or a ``before -> after``."""
    before, after = plain[:i], plain[i + 1 :]
    # A number stays with the word before (``dim 1``) and after it (``36 calls``); ``at`` stays
    # with the place it names (``at train.py:41``).
    glued = before[-1:].isdigit() or after[:1].isdigit() or before.endswith("->") or after.startswith("->")
    return not (glued or before == "at" or before.endswith(" at"))


def hang_of(line: str) -> int:
    """The hanging indent that lines wrapped lines up after a step number (``1. ``)."""
    number, dot, _ = line.partition(". ")
    return len(number) + 2 if dot and number.isdigit() else 2


def indent(renderable: RenderableType, spaces: int, hang: int = 0) -> Indented:
    """Indent ``spaces`` columns; lines wrapped from one line indent ``hang`` more."""
    return Indented(renderable, spaces, hang)


class Indented:
    """An indented block that, unlike rich's Padding, never crops a line that runs long."""

    def __init__(self, renderable: RenderableType, spaces: int, hang: int) -> None:
        self.renderable = renderable
        self.spaces = spaces
        self.hang = hang

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update(width=max(20, options.max_width - self.spaces - self.hang))
        if isinstance(self.renderable, Prose):  # its first line is not hung: it may be that much longer
            self.renderable.first_extra = self.hang
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
