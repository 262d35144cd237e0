"""Atomic file writes: a file tfretrace writes is either the old one or the whole new one."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
