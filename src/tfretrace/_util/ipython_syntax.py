"""IPython-only lines in a notebook cell (magics, shell escapes, help), found where IPython finds them."""

from __future__ import annotations

import re
import tokenize

# Line magics, shell escapes, help (`?x`, `obj?`, `obj??`), magic assignment (`files = !ls`).
_MAGIC_LINE = re.compile(r"^\s*(?:[%!]|\?|[\w.]+\?{1,2}\s*$|\w+\s*=\s*[%!])")
CELL_MAGIC = re.compile(r"^\s*%%")


def ipython_lines(lines: list[str]) -> set[int]:
    """The 0-based indexes of the cell's lines that are IPython syntax, not Python.

    IPython reads its escapes only at the start of a logical line: a continuation line inside
    brackets (``% (loss, acc))`` under a ``print(...``), after a backslash, or inside a
    triple-quoted string is Python, whatever its first character. Python's own tokenizer says
    where logical lines start, so this needs no IPython.
    """
    found: set[int] = set()
    for index, line in enumerate(lines):
        if _MAGIC_LINE.match(line) and _starts_logical_line(lines, index, found):
            found.add(index)
    return found


def _starts_logical_line(lines: list[str], index: int, escapes: set[int]) -> bool:
    """Whether the lines before ``index`` (IPython lines among them read as blank) end a statement."""
    before = iter(["\n" if n in escapes else line + "\n" for n, line in enumerate(lines[:index])])
    try:
        for _ in tokenize.generate_tokens(lambda: next(before, "")):
            pass
    except tokenize.TokenError:  # the end came inside brackets, a string or after a backslash
        return False
    except SyntaxError:  # broken indentation before: Python cannot say, so the line alone decides
        return True
    return True
