"""``fix --verify --also-run CMD``: the edited program on other data (a seed, a size) against the original.

The recorded run is the data the plan was fitted to; a signature pinned to a length that happened
to be constant there passes ``--verify`` and crashes on the next dataset. So each ``--also-run``
command runs twice in one copy of the program, first as written and then with the edits, both with
plain Python (no monitor: only the program's own behaviour is compared). The edited run must exit
as the original did and print the same standard output. Where the original itself prints
something else when run again (times, unseeded draws), outputs cannot be compared and that is said
instead of a verdict. A changed output passes only where the applied steps' ``changes`` words
explain it (fix.applying.announced).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfretrace.fix.applying.announced import excusing
from tfretrace.fix.applying.apply import FileChange, write_all
from tfretrace.fix.applying.verify import program_command
from tfretrace.fix.applying.workcopy import kept, work_copy

# What a comparison found, in the order of gravity.
CRASHED, EXIT_DIFFERS, OUTPUT_DIFFERS, UNSTABLE, SAME = "crashed", "exit-differs", "output-differs", "unstable", "same"


@dataclass(frozen=True)
class OtherData:
    """One ``--also-run`` command's result: the original's and the edited program's runs compared."""

    command: tuple[str, ...]
    verdict: str  # one of CRASHED, EXIT_DIFFERS, OUTPUT_DIFFERS, UNSTABLE, SAME
    exit_before: int
    exit_after: int
    first_difference: str = ""  # the first differing line of standard output, as "before | after"
    stderr_tail: str = ""  # the edited run's last lines of stderr when it failed
    excused_by: tuple[str, ...] = ()  # OUTPUT_DIFFERS: the announced words that explain the change


def _run(python: list[str], args: list[str], copy: Path, timeout: float | None) -> tuple[int, bytes, bytes]:
    try:
        done = subprocess.run([*python, *args], cwd=copy, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return 124, exc.stdout or b"", exc.stderr or b""
    return done.returncode, done.stdout, done.stderr


def _first_difference(before: bytes, after: bytes) -> str:
    a = before.decode("utf-8", "replace").splitlines()
    b = after.decode("utf-8", "replace").splitlines()
    for x, y in zip(a + ["<end>"] * max(0, len(b) - len(a)), b + ["<end>"] * max(0, len(a) - len(b))):
        if x != y:
            return f"{x[:120]} | {y[:120]}"
    return ""


def run_on_other_data(changes: Sequence[FileChange], command: Sequence[str], root: Path, *,
                      timeout: float | None = None, link_data: Sequence[str] = (),
                      announced: Iterable[str] = ()) -> OtherData:
    """Run ``command`` on a copy of ``root`` as written, then with ``changes`` applied, and compare.

    ``announced``: the ``changes`` words of the applied steps; a changed output records those that
    explain it (``excused_by``), none where the change is more than they say.
    """
    flags, args = program_command(command)
    python = [sys.executable, *flags]
    with work_copy(root, kept([change.path for change in changes], args), link_data, purpose="--also-run") as (copy, _):
        # The original first, in the copy (a run may write files; the original folder stays as it is).
        exit_before, out_before, _ = _run(python, args, copy, timeout)
        write_all(changes, base=copy)
        exit_after, out_after, err_after = _run(python, args, copy, timeout)
        tail = "\n".join(err_after.decode("utf-8", "replace").rstrip().splitlines()[-10:])
        if exit_after != exit_before:
            verdict = CRASHED if exit_before == 0 else EXIT_DIFFERS
            return OtherData(tuple(command), verdict, exit_before, exit_after, stderr_tail=tail)
        if out_after == out_before:
            return OtherData(tuple(command), SAME, exit_before, exit_after)
        # Is it the edit, or does the program print something else on every run? Ask the original again.
        write_all([replace(c, before=c.after, after=c.before) for c in changes], base=copy)
        _, out_again, _ = _run(python, args, copy, timeout)
        verdict = OUTPUT_DIFFERS if out_again == out_before else UNSTABLE
        excused = tuple(excusing(out_before.decode("utf-8", "replace"), out_after.decode("utf-8", "replace"),
                                 announced)) if verdict == OUTPUT_DIFFERS else ()
        return OtherData(tuple(command), verdict, exit_before, exit_after, _first_difference(out_before, out_after),
                         excused_by=excused)

