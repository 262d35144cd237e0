"""Check a plan by measurement: apply its edits to a copy of the program, run it monitored, compare."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tfretrace.events import FunctionReport
from tfretrace.fix.apply import FileChange, FixError, write_all
from tfretrace.fix.plan import applied_count, plan_steps, predict_applied
from tfretrace.fix.source import SourceReader
from tfretrace.session import Session, SessionFormatError, load

# Folders a program copy does without: environments, VCS data and caches can be gigabytes.
_SKIP = shutil.ignore_patterns(
    ".git", ".hg", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", ".matrix", "*.egg-info", ".tfretrace_cache",
)


@dataclass(frozen=True)
class Outcome:
    """One function's traces before (the recorded run) and after (the run of the edited copy)."""

    name: str
    location: str
    traces_before: int
    traces_after: int | None  # None: the function did not trace in the edited run
    predicted: int | None  # what the plan predicts once only its mechanical edits are made
    seconds_before: float
    seconds_after: float


@dataclass(frozen=True)
class Verification:
    """What running the edited copy showed."""

    exit_status: int
    outcomes: tuple[Outcome, ...]
    session: Session | None
    stderr_tail: str


def program_command(command: Sequence[str]) -> list[str]:
    """The arguments for ``tfretrace run``: a leading ``python``/``python3 -u`` is dropped."""
    args = list(command)
    if args and Path(args[0]).name.startswith("python"):
        args = args[1:]
        while args and args[0].startswith("-") and args[0] != "-m":
            args = args[1:]  # interpreter flags such as -u or -O: tfretrace run takes the program
    if not args:
        raise FixError("--verify needs the command that runs the program, e.g. -- python train.py")
    return args


def verify(session: Session, changes: Sequence[FileChange], command: Sequence[str], root: Path) -> Verification:
    """Copy ``root``, apply ``changes`` in the copy, run ``command`` there under the monitor."""
    args = program_command(command)
    for change in changes:
        if Path(change.path).is_absolute():
            raise FixError(f"{change.path}: outside the program's folder; --verify copies only {root}")
    with tempfile.TemporaryDirectory(prefix="tfretrace-verify-") as tmp:
        copy = Path(tmp) / root.name
        try:
            shutil.copytree(root, copy, ignore=_SKIP, symlinks=True)
        except (OSError, shutil.Error) as exc:
            raise FixError(f"cannot copy {root} for --verify ({exc.__class__.__name__})") from None
        write_all(changes, base=copy)
        saved = Path(tmp) / "after.json"
        env = dict(os.environ)
        # The copy runs the same tfretrace as this process, whatever the program's folder holds.
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        proc = subprocess.run(
            [sys.executable, "-m", "tfretrace", "run", "--save", str(saved), *args],
            cwd=copy, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        )
        try:
            after: Session | None = load(saved)
        except SessionFormatError:
            after = None
    return Verification(proc.returncode, _compare(session, after, root), after, _tail(proc.stderr))


def _compare(before: Session, after: Session | None, root: Path) -> tuple[Outcome, ...]:
    # Edits move line numbers (a decorator grows), so functions match by name and file, and Keras
    # rows by their method too: fit's train function is never compared with evaluate's.
    measured = {}
    if after is not None:
        measured = {row_key(f): f for f in after.functions}
    out = []
    reader = SourceReader(root)
    for report in before.functions:
        if report.retraces == 0:
            continue
        key = row_key(report)
        # A def moved out of its function to module level loses the "outer.<locals>." prefix.
        now = measured.get(key) or measured.get((key[0].rsplit(".", 1)[-1], *key[1:]))
        out.append(
            Outcome(
                name=report.display_name(),
                location=report.location,
                traces_before=report.traces,
                traces_after=now.traces if now is not None else None,
                predicted=_predicted(report, reader),
                seconds_before=report.trace_seconds,
                seconds_after=now.trace_seconds if now is not None else 0.0,
            )
        )
    return tuple(out)


def row_key(report: FunctionReport) -> tuple[str, str, str | None]:
    """What matches one function's row between the recorded run and the edited one."""
    method = report.keras.method if report.keras is not None else None
    return report.name, report.location.rpartition(":")[0], method


def _predicted(report: FunctionReport, reader: SourceReader) -> int | None:
    # The saved plan's own tfretrace steps are exactly what was applied: their count, never a
    # step by hand. A session saved without a plan is planned now, applied edits only.
    saved = applied_count(plan_steps(report))
    if saved is not None:
        return saved
    try:
        return predict_applied(report, reader)
    except Exception:  # a prediction is extra information; the measurement stands without it
        return None


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
