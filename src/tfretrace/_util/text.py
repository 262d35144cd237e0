"""Text every output shares: recorded strings made safe to show (no terminal control sequences,
nothing unencodable), and counted nouns."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI on some terminals),
# line/paragraph separators and the bidirectional overrides that can reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (ESC, OSC, CR, bidi overrides...) shown as escapes.

    Newlines and tabs stay: report lines and fix code are multi-line. A name, path or note
    recorded from the user's program can then never drive the terminal it is printed on.
    """
    return _SURROGATE.sub(_escape, _UNSAFE.sub(_escape, text))


def encodable(text: str) -> str:
    """``text`` with lone surrogates (from undecodable file names) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def one_line(text: str) -> str:
    """``printable(text)`` with newlines and tabs escaped too: for messages that must stay one line."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def plural(count: int, word: str) -> str:
    """``1 retrace``, ``2 retraces``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def split_site(site: str | None) -> tuple[str, int]:
    """A call site ``path:line`` as (path, line) for warnings.warn_explicit; ("<unknown>", 0) if unknown."""
    if not site or ":" not in site:
        return "<unknown>", 0
    filename, _, line = site.rpartition(":")
    return filename or "<unknown>", int(line) if line.isdigit() else 0


# Python ends a line at \r\n, \r or \n only; str.splitlines() also splits at \f, \x1c-\x1e, \x85,
# U+2028 and U+2029, which may sit inside a string literal and would shift every later line.
_PY_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """``text``'s lines as Python numbers them (otherwise what ``str.splitlines`` returns)."""
    found = _PY_LINE.findall(text)
    return found if keepends else [line.rstrip("\r\n") for line in found]
