"""A digest of what a program wrote to stdout (never the text): made, checked when read, two compared."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from tfretrace._util import checked as C

# Per-line digests kept (the first lines): enough to say where two outputs part, small in a session.
MAX_LINE_DIGESTS = 1000
LINE_DIGEST_HEX = 8  # 32 bits: a line digest only locates a difference; the sha256 decides it
_SHA256 = re.compile(r"[0-9a-f]{64}")
_LINE = re.compile(rf"[0-9a-f]{{{LINE_DIGEST_HEX}}}")


@dataclass(frozen=True)
class OutputDigest:
    """stdout of one run: size, lines, sha256 of all of it, short digests of its first lines."""

    size: int
    lines: int
    sha256: str
    line_digests: tuple[str, ...]
    terminal: bool = False  # stdout was a terminal (a program may print otherwise there: progress bars)

    def to_dict(self) -> dict[str, Any]:
        """The session's ``output.stdout``."""
        return {"bytes": self.size, "lines": self.lines, "sha256": self.sha256,
                "line_sha256": list(self.line_digests), "terminal": self.terminal}

    @classmethod
    def from_dict(cls, data: Any, where: str = "output.stdout") -> OutputDigest:
        """Read an untrusted ``output.stdout``; FieldError names the bad field."""
        data = C.mapping(data, where)
        size = C.count(data.get("bytes"), f"{where}.bytes")
        lines = C.count(data.get("lines"), f"{where}.lines")
        if lines > size or (size > 0 and lines == 0):
            raise C.FieldError(f"{where}.lines ({lines}) is impossible for {size} bytes")
        sha256 = C.text(data.get("sha256"), f"{where}.sha256")
        if not _SHA256.fullmatch(sha256):
            raise C.FieldError(f"{where}.sha256 must be 64 lowercase hex digits")
        digests = C.texts(data.get("line_sha256", []), f"{where}.line_sha256")
        if len(digests) != min(lines, MAX_LINE_DIGESTS):
            raise C.FieldError(f"{where}.line_sha256 must hold one digest for each of the first "
                               f"{MAX_LINE_DIGESTS} lines ({len(digests)} for {lines} lines)")
        if not all(_LINE.fullmatch(d) for d in digests):
            raise C.FieldError(f"{where}.line_sha256 items must be {LINE_DIGEST_HEX} lowercase hex digits")
        return cls(size, lines, sha256, digests, C.flag(data.get("terminal", False), f"{where}.terminal"))

    def same_as(self, other: OutputDigest) -> bool:
        """The very same bytes (by size and sha256)."""
        return self.size == other.size and self.sha256 == other.sha256


class Digester:
    """Builds an :class:`OutputDigest` from a byte stream fed in pieces (split anywhere)."""

    def __init__(self) -> None:
        self._all = hashlib.sha256()
        self._line = hashlib.sha256()
        self._open = False  # bytes of a line whose newline has not come yet
        self._size = 0
        self._lines = 0
        self._line_digests: list[str] = []

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the stream."""
        self._all.update(data)
        self._size += len(data)
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline + 1
            if self._lines < MAX_LINE_DIGESTS:
                self._line.update(data[start:end])
            self._open = newline < 0
            if newline >= 0:
                if self._lines < MAX_LINE_DIGESTS:
                    self._line_digests.append(self._line.hexdigest()[:LINE_DIGEST_HEX])
                    self._line = hashlib.sha256()
                self._lines += 1
            start = end

    def digest(self, terminal: bool = False) -> OutputDigest:
        """What was fed so far; a last line without its newline counts as a line."""
        lines, digests = self._lines, list(self._line_digests)
        if self._open:
            if lines < MAX_LINE_DIGESTS:
                digests.append(self._line.hexdigest()[:LINE_DIGEST_HEX])
            lines += 1
        return OutputDigest(self._size, lines, self._all.hexdigest(), tuple(digests), terminal)


def first_difference(a: OutputDigest, b: OutputDigest) -> int | None:
    """The 1-based number of the first line that differs, or None: same output, or beyond the lines kept."""
    if a.same_as(b):
        return None
    for number, (x, y) in enumerate(zip(a.line_digests, b.line_digests), start=1):
        if x != y:
            return number
    shorter = min(a.lines, b.lines)
    # Every kept line agrees: the first line one output has and the other has not.
    return shorter + 1 if a.lines != b.lines and shorter < MAX_LINE_DIGESTS else None


def output_from_dict(data: Any) -> OutputDigest | None:
    """The session's optional ``output`` object (absent: recorded by an older tfretrace or not at all)."""
    if data is None:
        return None
    data = C.mapping(data, "output")
    stdout = data.get("stdout")
    return None if stdout is None else OutputDigest.from_dict(stdout, "output.stdout")
