"""Safe file access: atomic writes (the old file or the whole new one), bounded reads of regular files only."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# What no output of tfretrace replaces: a program's source or a notebook is someone's work.
SOURCE_SUFFIXES = frozenset({".py", ".pyw", ".ipynb"})


def is_source_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path``, or the file a symbolic link there leads to, is Python source or a notebook."""
    given = Path(path)
    return any(p.suffix.lower() in SOURCE_SUFFIXES for p in (given, Path(os.path.realpath(given))))


def atomic_write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
    """Write text to path through a temporary file in the same folder and a rename.

    A crash or an encoding error leaves the earlier file untouched. The new file gets the
    permissions an ordinary open() would give it (0666 less the umask), not mkstemp's 0600.
    A symbolic link is written through, as open() would: the file it points to is replaced and
    the link stays. Anything but a regular file (a device such as /dev/stdout, a FIFO, a folder)
    is refused with OSError: a rename would replace it with a file.
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    if target.exists() and not target.is_file():
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(given))
    folder = target.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
        mode = 0o666 & ~_umask()
        if target.exists():
            mode = target.stat().st_mode & 0o7777
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return given


def read_regular(path: str | os.PathLike[str], max_size: int) -> bytes | str:
    """The bytes of a regular file of at most ``max_size`` bytes, or why it is not read (OSError on failure).

    Opened without blocking and checked on the open descriptor: a FIFO named ``pipe.py``
    would block forever and a link to /dev/zero never ends, even if swapped in after a stat.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > max_size:
            return f"file too large ({info.st_size} bytes > {max_size})"
        chunks = []
        total = 0
        while True:  # bounded even when the size lied (a file still growing, /proc)
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_size:
                return f"file too large (more than {max_size} bytes)"
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
