"""Escaping recorded strings for markdown: one place, so a name or repr can never become markup."""

from __future__ import annotations

import re

# Characters markdown (CommonMark and GitHub's tables) gives a meaning to inside a line: emphasis,
# code, links and images, raw HTML, table cells, strikethrough. (Headings and list markers only
# count at a line's start, where the report always puts its own text.)
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def code(text: str) -> str:
    """A code span for a recorded string: no backtick, pipe or line break can end it or the table.

    The span's fence is longer than any run of backticks inside, so the text stays as it is;
    a pipe is escaped (GitHub splits table cells on it even inside code) and lines become spaces.
    """
    flat = " ".join(text.replace("|", "\\|").splitlines()) if text else ""
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def text(value: str) -> str:
    """Running text from a recorded string: every markdown character escaped, HTML inert, one line."""
    return _SPECIAL.sub(r"\\\1", " ".join(value.splitlines()))
