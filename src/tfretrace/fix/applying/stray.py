"""Stopping a ``--verify`` run and everything it started, a process in a session of its own included.

The run has a process group of its own, but a helper started with ``start_new_session=True``
(setsid) leaves it, and a daemon that forks twice leaves its parent too. Linux's /proc names both
without cgroups: the run's descendants (by parent id, read while the run is still alive), and any
process whose working folder is inside the copy (a daemon reparented away; it would keep running
in a folder that is about to be removed). Where there is no /proc, only the group is stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

_PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """Every visible process's parent id (pid -> ppid); zombies left out (they are done)."""
    found: dict[int, int] = {}
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        state = _stat(int(entry.name))
        if state is not None and state[0] != "Z":
            found[int(entry.name)] = state[1]
    return found


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent id) from /proc/PID/stat, or None when it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses: the fields follow the last ")".
    fields = text.rpartition(")")[2].split()
    try:
        return fields[0], int(fields[1])
    except (IndexError, ValueError):
        return None


def descendants(root: int) -> set[int]:
    """The processes under ``root`` (children, theirs, ...), in their own sessions or not."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def working_in(folder: Path) -> set[int]:
    """The processes whose working folder is ``folder`` or inside it (this process never)."""
    base = os.path.realpath(folder)
    found = set()
    for pid in _parents():
        try:
            cwd = os.readlink(_PROC / str(pid) / "cwd")
        except OSError:
            continue  # gone, or another user's
        if (cwd == base or cwd.startswith(base + os.sep)) and pid != os.getpid():
            found.add(pid)
    return found


def _alive(pid: int) -> bool:
    state = _stat(pid)
    return state is not None and state[0] != "Z"


def stop(proc: subprocess.Popen[bytes], folder: Path, grace: float) -> None:
    """End the run's process group and every process it started or that works in ``folder``.

    SIGTERM first; after ``grace`` seconds SIGKILL to whatever is left. The processes are named
    before any signal: once the run ends, its helpers are reparented and no longer its descendants.
    """
    # Descendants only of a run not yet reaped: a reaped run's id may be another process's.
    mine = descendants(proc.pid) if proc.poll() is None else set()
    others = (mine | working_in(folder)) - {proc.pid, os.getpid()}
    deadline = time.monotonic() + grace
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is None:  # once it is reaped, its id may be another process's
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if sig == signal.SIGKILL:
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        while any(_alive(p) for p in others) and time.monotonic() < deadline:
            time.sleep(0.05)
        others = {p for p in others if _alive(p)}
        if proc.poll() is not None and not others:
            return
    proc.wait()
