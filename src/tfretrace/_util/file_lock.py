"""An exclusive lock for a read-change-write of one file shared by concurrent processes (POSIX flock)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # Windows: no flock; writes stay atomic but concurrent widening may race
    fcntl = None  # type: ignore[assignment]


def lock_path(path: str | os.PathLike[str]) -> str:
    """The sidecar lock file of ``path``: beside the file it guards, hidden.

    Not the file itself: an atomic write replaces it with a new inode, and a lock held on the
    old one would guard nothing. Links are resolved so two names of one file share one lock.
    """
    target = os.path.realpath(os.fspath(path))
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.lock")


@contextlib.contextmanager
def exclusive(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``path``'s lock (blocking until no other process holds it); OSError if it cannot be made.

    The lock file is left in place: removing it would let a waiting process lock a file the
    next one no longer sees.
    """
    if fcntl is None:
        yield
        return
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by close, also when the process dies
        yield
    finally:
        os.close(fd)
