"""Check a plan by measurement: apply its edits to a copy of the program, run it monitored, compare."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from tfretrace.fix.applying.apply import FileChange, FixError, write_all
from tfretrace.fix.applying.converge import Round, more_rounds
from tfretrace.fix.applying.output_check import StdoutCheck, check_stdout
from tfretrace.fix.applying.stray import stop
from tfretrace.fix.applying.workcopy import kept, snapshot, work_copy
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.plan import saved_prediction
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.output import OutputDigest
from tfretrace.records.session import Session, SessionFormatError, load

# Interpreter options that take a value (``-W ignore``, ``-X dev``), as ``python --help`` lists them.
_VALUED = frozenset("WX")
_VALUED_LONG = frozenset({"--check-hash-based-pycs"})
# Seconds the edited program gets to end after SIGTERM before it is killed.
_GRACE = 5.0


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
    log: Path | None = None  # the program's output
    seconds: float = 0.0  # copy and run, wall clock
    timed_out: bool = False
    changed_data: tuple[str, ...] = ()  # linked data files the run changed (it should only read them)
    stdout: StdoutCheck | None = None  # whether its stdout matched the recorded run's (fix.applying.output_check)
    # With rounds (fix.applying.converge): each round, why they stopped, and every kept round's edits
    # as one change per file (what --apply writes); the session, log and stdout are the last kept round's.
    rounds: tuple[Round, ...] = ()
    stopped: str = ""  # a fixed word (fix.applying.converge: converged, no-trace-removed, ...)
    stopped_detail: str = ""
    changes: tuple[FileChange, ...] = ()


def program_command(command: Sequence[str]) -> tuple[list[str], list[str]]:
    """(interpreter options, arguments for ``tfretrace run``) of a command such as ``python -W ignore train.py``.

    The options are kept for the interpreter that runs the copy; ``-c`` and a program read from
    stdin cannot be run by ``tfretrace run``.
    """
    args = list(command)
    flags: list[str] = []
    if args and Path(args[0]).name.startswith("python"):
        args = args[1:]
        while args and args[0].startswith("-") and args[0] != "-m":
            option = args.pop(0)
            flags.append(option)
            if option == "-" or option.startswith("-c") or option == "--":
                raise FixError("--verify runs a program file or -m module, not python -c or stdin")
            if option.startswith("--"):
                if option in _VALUED_LONG and args:
                    flags.append(args.pop(0))
                continue
            letters = option[1:]
            for at, letter in enumerate(letters):
                if letter in _VALUED:
                    if at == len(letters) - 1 and args:  # "-W ignore", "-uW ignore"; "-Wignore" holds it
                        flags.append(args.pop(0))
                    break
    if not args:
        raise FixError("--verify needs the command that runs the program, e.g. -- python train.py")
    return flags, args


def log_path(session_path: str | os.PathLike[str]) -> Path:
    """Where the edited program's output goes: beside the session, else in the temporary folder."""
    given = Path(session_path)
    beside = given.with_name(given.stem + ".verify.log")
    if os.access(beside.parent, os.W_OK) and (not beside.exists() or beside.is_file()):
        return beside
    return Path(tempfile.gettempdir()) / f"tfretrace-{os.getpid()}.verify.log"


class _Terminated(SystemExit):
    """SIGTERM while the copy runs: unwinds so that the program is stopped and the copy removed."""


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def verify(
    session: Session,
    changes: Sequence[FileChange],
    command: Sequence[str],
    root: Path,
    *,
    log: Path | None = None,
    timeout: float | None = None,
    link_data: Sequence[str] = (),
    status: TextIO | None = None,
    unsafe: bool = False,
    check_output: bool = True,
    converge: int = 1,
) -> Verification:
    """Copy ``root`` (see fix.applying.workcopy), apply ``changes`` in the copy, run ``command`` there monitored.

    Nothing is written outside the copy but the log; SIGTERM stops the program and removes the copy.
    With ``check_output`` its stdout is compared with the recorded run's, and where they differ an
    unedited copy is run the same way afterwards (fix.applying.output_check). ``converge`` above 1:
    up to that many rounds, each planned from the run before it (fix.applying.converge).
    """
    from tfretrace.fix.applying.progress import Status

    flags, args = program_command(command)
    for change in changes:
        if Path(change.path).is_absolute():
            raise FixError(f"{change.path}: outside the program's folder; --verify copies only {root}")
    started = time.monotonic()
    log = log or Path(tempfile.gettempdir()) / f"tfretrace-{os.getpid()}.verify.log"
    with _sigterm_unwinds(), Status(status, started) as shown, work_copy(
        root, kept([change.path for change in changes], args), link_data, purpose="--verify",
        started=lambda count: shown.task("copying the program", count), advance=shown.advance,
    ) as (copy, linked):
        before = snapshot(linked)
        write_all(changes, base=copy)
        saved = copy.parent / "after.json"  # beside the copy, in its temporary folder
        env = dict(os.environ)
        # The edited program is measured as written: no prevention from the environment or the
        # project's settings (--no-prevent below), or the count would be the warm-up's, not the fix's.
        env.pop("TFRETRACE_PREVENT", None)
        # The copy runs the same tfretrace as this process, whatever the program's folder holds: the
        # folder above the top package, as deep as this module's dotted name (not a count that
        # breaks when the module moves; tfretrace/keras.py on the path would shadow Keras).
        package_root = str(Path(__file__).resolve().parents[__name__.count(".")])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        shown.task("running the edited program", None)

        first_log: Path = log

        def run(number: int) -> tuple[int, bool, Session | None, Path | None]:
            # Round 1's output goes to the log; each later round's beside it (x.verify.round2.log).
            path = first_log if number == 1 else first_log.with_name(f"{first_log.stem}.round{number}.log")
            if number > 1:
                shown.task(f"running the edited program, round {number}", None)
            return (*_run_copy(copy, flags, args, env, path, saved, timeout), path)

        status_code, timed_out, after, _ = run(1)
        rounds: tuple[Round, ...] = ()
        edits = tuple(changes)
        stopped = stopped_detail = ""
        if converge > 1 and changes and not timed_out and status_code == 0 and after is not None:
            # Plan again from the edited copy's own run (fix.applying.converge); what it edits stays in the copy.
            done = more_rounds(session, after, changes, copy, root, unsafe=unsafe, limit=converge, run=run, log=log)
            rounds, stopped, stopped_detail = done.rounds, done.stopped, done.detail
            edits, after, log = done.changes, done.session, done.log or log
        changed = tuple(str(p) for p, was in snapshot(linked).items() if was != before.get(p))
    exit_status = status_code if not timed_out else 124
    stdout = None
    if check_output:
        def unedited() -> OutputDigest | None:
            # The same command, copy and monitor, nothing edited: its own log beside the edited run's.
            again = verify(session, (), command, root, log=log.with_name(log.stem + ".unedited.log"),
                           timeout=timeout, link_data=link_data, status=status, check_output=False)
            return again.session.stdout if again.session is not None and again.exit_status == 0 else None

        # A failed edited run is reported as failed; a second run would not change that verdict.
        recorded, edited = session.stdout, after.stdout if after is not None else None
        stdout = check_stdout(recorded, edited, unedited if exit_status == 0 else None)
    return Verification(
        exit_status,
        _compare(session, after, root, unsafe),
        after,
        _tail(log),
        log,
        time.monotonic() - started,
        timed_out,
        changed,
        stdout,
        rounds,
        stopped,
        stopped_detail,
        edits,
    )


def _run_copy(copy: Path, flags: Sequence[str], args: Sequence[str], env: dict[str, str], log: Path, saved: Path,
              timeout: float | None) -> tuple[int, bool, Session | None]:
    """Run the program in the copy under the monitor: (exit status, timed out, the session it saved)."""
    saved.unlink(missing_ok=True)  # a session left by an earlier round is not this run's
    timed_out = False
    try:
        out = open(log, "wb")  # noqa: SIM115 (closed below, after the program has ended)
    except OSError as exc:
        raise FixError(f"{log}: cannot write the program's log ({exc.strerror or exc})") from None
    with out:
        proc = subprocess.Popen(
            [sys.executable, *flags, "-m", "tfretrace", "run", "--no-prevent", "--save", str(saved), *args],
            cwd=copy, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # one process group: stopped as a whole, Ctrl-C included
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # The program, its group, and what it started in sessions of its own (fix.applying.stray).
            stop(proc, copy, _GRACE)
    try:
        after: Session | None = None if timed_out else load(saved)
    except SessionFormatError:
        after = None
    return proc.returncode, timed_out, after


def _compare(before: Session, after: Session | None, root: Path, unsafe: bool = False) -> tuple[Outcome, ...]:
    # Edits move line numbers (a decorator grows), so functions match by name and file, and Keras
    # rows by their method too: fit's train function is never compared with evaluate's.
    partners = _partners(before.functions, after.functions if after is not None else ())
    out = []
    reader = SourceReader(root)
    # A session saved from a prevented run: its prevented functions are planned as written, so
    # their "before" is the count without prevention (the row's as-written replay).
    written = {(f.name, f.location): f.traces_without for f in before.prevention.functions} \
        if before.prevention is not None else {}
    for index, report in enumerate(before.functions):
        as_written = written.get((report.name, report.location))
        if report.retraces == 0 and not (as_written is not None and report.plan):
            continue
        now = partners.get(index)
        out.append(
            Outcome(
                name=report.display_name(),
                location=report.location,
                traces_before=as_written if as_written is not None else report.traces,
                traces_after=now.traces if now is not None else None,
                predicted=_predicted(report, reader, unsafe),
                seconds_before=report.trace_seconds,
                seconds_after=now.trace_seconds if now is not None else 0.0,
            )
        )
    return tuple(out)


def _partners(
    before: Sequence[FunctionReport], after: Sequence[FunctionReport]
) -> dict[int, FunctionReport]:
    """Each recorded row's row in the edited run, each row of either run used once.

    Several rows can share a name in one file (two ``Dataset.map(<lambda>)`` pipelines): the one
    at the same line first, then the others in line order, so two pipelines are never both
    matched with one of them.
    """
    groups: dict[tuple[str, str, str | None], list[int]] = {}
    for index, report in enumerate(after):
        groups.setdefault(row_key(report), []).append(index)
    taken: set[int] = set()
    found: dict[int, FunctionReport] = {}

    def candidates(report: FunctionReport) -> list[int]:
        key = row_key(report)
        # A def moved out of its function to module level loses the "outer.<locals>." prefix.
        return groups.get(key) or groups.get((key[0].rsplit(".", 1)[-1], *key[1:])) or []

    for index, report in enumerate(before):
        same = [i for i in candidates(report) if after[i].location == report.location and i not in taken]
        if same:
            taken.add(same[0])
            found[index] = after[same[0]]
    for index in sorted((i for i in range(len(before)) if i not in found), key=lambda i: _line(before[i])):
        rest = sorted((i for i in candidates(before[index]) if i not in taken), key=lambda i: _line(after[i]))
        if rest:
            taken.add(rest[0])
            found[index] = after[rest[0]]
    return found


def _line(report: FunctionReport) -> int:
    line = report.location.rpartition(":")[2]
    return int(line) if line.isdigit() else 0


def row_key(report: FunctionReport) -> tuple[str, str, str | None]:
    """What matches one function's row between the recorded run and the edited one."""
    method = report.keras.method if report.keras is not None else None
    return report.name, report.location.rpartition(":")[0], method


def _predicted(report: FunctionReport, reader: SourceReader, unsafe: bool) -> int | None:
    # The saved plan's own tfretrace steps are exactly what was applied (the unsafe ones too with
    # --unsafe-fixes): their count, never a step by hand. A session saved without a plan is
    # planned now, applied edits only.
    try:
        return saved_prediction(report, reader, unsafe=unsafe)
    except Exception:  # a prediction is extra information; the measurement stands without it
        return None


def _tail(log: Path, lines: int = 15, limit: int = 1 << 16) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - limit))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
