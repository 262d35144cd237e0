"""The user's source files as Python reads them: regular files only, decoded by BOM or cookie, lines as in ast."""

from __future__ import annotations

import hashlib
import io
import os
import tokenize
from dataclasses import dataclass
from pathlib import Path

from tfretrace._util.io import read_regular
from tfretrace._util.text import source_lines

# Bigger than any hand-written module; a bound so that a session cannot make fix read a huge file.
MAX_SOURCE_BYTES = 16 * 1024 * 1024


class SourceError(ValueError):
    """Why a source file cannot be read as Python source: one line."""


@dataclass(frozen=True)
class SourceFile:
    """One source file: its bytes, its text as Python decodes it, and the encoding to write it back in."""

    data: bytes
    text: str  # a BOM removed, line endings as they are in the file
    encoding: str  # tokenize's name: "utf-8-sig" when a BOM starts the file

    def encode(self, text: str) -> bytes:
        """``text`` in this file's encoding (a BOM kept); SourceError when it cannot be."""
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError:
            raise SourceError(f"the new text cannot be written in the file's encoding ({self.encoding})") from None


def read_source_file(path: str | os.PathLike[str], max_size: int = MAX_SOURCE_BYTES) -> SourceFile:
    """A regular file's bytes and decoded text; FileNotFoundError, or SourceError for anything unusable.

    A FIFO, a device such as /dev/zero or a huge file is refused without blocking or reading it.
    """
    try:
        data = read_regular(path, max_size)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SourceError(f"cannot read ({exc.strerror or exc.__class__.__name__})") from None
    if isinstance(data, str):
        raise SourceError(data)
    return decode_source(data)


def decode_source(data: bytes) -> SourceFile:
    """Decode source bytes as the interpreter does (PEP 263 cookie or BOM, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        raise SourceError("not decodable as Python source (check its coding cookie)") from None
    return SourceFile(data, text, encoding)


def lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings, numbered as ``ast`` numbers them (index 0 is line 1)."""
    return source_lines(text, keepends=True)


def digest(data: bytes) -> str:
    """The sha256 a session stores for a source file: of its bytes, so line endings and encoding count."""
    return hashlib.sha256(data).hexdigest()


def resolve(path: str, root: str | os.PathLike[str] | None) -> Path:
    """The file on disk for a recorded path: relative paths start at ``root`` (None: here)."""
    candidate = Path(path)
    return candidate if candidate.is_absolute() or root is None else Path(root) / candidate


def is_user_path(path: str) -> bool:
    """False for files of TensorFlow, Keras and other installed packages: fixes never edit those."""
    norm = path.replace("\\", "/")
    if norm.startswith("<") or "site-packages/" in norm or "dist-packages/" in norm:
        return False
    first = norm.split("/", 1)[0]
    return first not in ("tensorflow", "keras", "tf_keras", "absl", "numpy")
