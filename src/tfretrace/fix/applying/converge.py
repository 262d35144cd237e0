"""``fix --verify``'s rounds: plan again from the edited copy's own run, edit the copy, run it, until nothing gains.

Round 1 is the recorded session's plan, applied to the copy and run there (fix.applying.verify).
A step can only be planned from what the run showed: a factory called on each pass is called once
in round 1 (hoist-factory-call), and only the run of that copy made the one object, held by a
module-level name, that TensorFlow can be asked about (fix-plan.md, point 6), so making its Python
value a tensor is safe only from round 2 on. Each
later round plans from the session of the run before it, as ``fix --apply`` would from a
recorded one (the same checks: hashes, anchors, safety classes), edits the copy and runs it under
the monitor again, as ruff repeats its fixes until none is left.

A later round is kept only where its run exited 0, printed what the run before it printed, and
traced fewer times in all (the monitor's count of TensorFlow's traces, the session's ``traces``);
otherwise its edits are taken back in the copy and the rounds stop. Round 1 is what ``--verify``
has always reported, kept or not by its own verdicts. What ``--apply`` then writes is every kept
round's edits at once: one change per file, from the original text to the copy's last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tfretrace.fix.applying.apply import FileChange, FixError, prepare, write_all
from tfretrace.fix.core.files import SourceError, read_source_file
from tfretrace.fix.planning.plan import plan_steps
from tfretrace.records.session import Session

# Why the rounds stopped: fixed words, read by scripts and tests (a Converged's ``stopped``).
CONVERGED = "converged"  # the last run's plans have no edit left to make
NO_GAIN = "no-trace-removed"  # the last round's run traced as often as the run before it: taken back
FAILED = "failed"  # the last round's run failed or gave no session: taken back
OUTPUT = "output-differs"  # the last round's run printed otherwise than the run before it: taken back
UNPLANNED = "not-applicable"  # the last run's plans could not be applied (FixError): nothing made
LIMIT = "limit"  # the rounds allowed were made

# One run of the copy as it now stands, for a round number: (exit status, timed out, its session, its log).
RunCopy = Callable[[int], "tuple[int, bool, Session | None, Path | None]"]


@dataclass(frozen=True)
class Round:
    """One round: the steps it edited, every function's traces before and after it, and whether it stands."""

    number: int
    kinds: tuple[str, ...]  # the kinds of the steps whose edits it made, in plan order
    files: tuple[str, ...]  # the files it edited, as the session it was planned from records them
    traces_before: int  # every function's traces in the run it was planned from
    traces_after: int | None  # the same in its own run; None: the run failed or gave no session
    exit_status: int
    kept: bool
    log: Path | None = None
    session: Session | None = field(default=None, compare=False, repr=False)  # its run's


@dataclass(frozen=True)
class Converged:
    """The rounds made and why they stopped; the last kept run's session and log; every kept edit, one change a file."""

    rounds: tuple[Round, ...]
    stopped: str
    detail: str  # what stopped them, in words (a FixError's message, an exit status)
    session: Session
    log: Path | None
    changes: tuple[FileChange, ...]


def total_traces(session: Session) -> int:
    """Every function's traces in one run (the monitor counts each trace TensorFlow makes)."""
    return sum(report.traces for report in session.functions)


def edited_kinds(session: Session, unsafe: bool) -> tuple[str, ...]:
    """The kinds of the steps whose edits ``prepare`` makes for this session, each once, in plan order."""
    kinds = [step.kind for report in session.functions for step in plan_steps(report)
             if step.edits and (unsafe or step.tier == 0)]
    return tuple(dict.fromkeys(kinds))


def first_round(session: Session, changes: Sequence[FileChange], after: Session | None, exit_status: int,
                log: Path | None, unsafe: bool) -> Round:
    """Round 1 as ``--verify`` ran it: the recorded session's plan, applied and run."""
    return Round(1, edited_kinds(session, unsafe), tuple(c.path for c in changes), total_traces(session),
                 total_traces(after) if after is not None else None, exit_status, True, log, after)


def more_rounds(
    recorded: Session, first: Session, changes: Sequence[FileChange], copy: Path, root: Path, *,
    unsafe: bool, limit: int, run: RunCopy, log: Path | None,
) -> Converged:
    """Rounds 2 to ``limit`` in ``copy``, where round 1's ``changes`` are written and ``first`` is its run's session.

    ``root`` is the program's own folder: the changes returned are of its files (read-only here).
    """
    copy, root = copy.resolve(), root.resolve()
    rounds = [first_round(recorded, changes, first, 0, log, unsafe)]
    # Each edited file by its path in the folder: (its path as first recorded, its text before any round).
    originals: dict[str, tuple[str, str, str]] = {}
    for change in changes:
        originals[_relative(change.disk, root)] = (change.path, change.before, change.encoding)
    current, stopped, detail = first, LIMIT, f"{limit} rounds made"
    for number in range(2, limit + 1):
        try:
            more, _advice = prepare(current, copy, unsafe=unsafe)
        except FixError as exc:
            stopped, detail = UNPLANNED, str(exc)
            break
        if not more:
            stopped, detail = CONVERGED, "no edit left to make"
            break
        for change in more:
            originals.setdefault(_relative(change.disk, copy), (change.path, change.before, change.encoding))
        write_all(more)  # in the copy: every path of ``more`` lies there (prepare checked it)
        status, timed_out, after, round_log = run(number)
        before_total = total_traces(current)
        verdict = _judge(current, after, status, timed_out)
        kept = verdict is None
        rounds.append(Round(number, edited_kinds(current, unsafe), tuple(c.path for c in more), before_total,
                            total_traces(after) if after is not None else None, 124 if timed_out else status,
                            kept, round_log, after))
        if not kept:
            # Taken back in the copy: the files are again what the last kept run ran.
            write_all([replace(c, before=c.after, after=c.before) for c in more])
            stopped, detail = verdict or (FAILED, "")
            break
        assert after is not None
        current, log = after, round_log
    return Converged(tuple(rounds), stopped, detail, current, log, _combined(originals, copy, root))


def _judge(before: Session, after: Session | None, status: int, timed_out: bool) -> tuple[str, str] | None:
    """Why a later round's run does not stand (a stop word and its detail), or None where it does."""
    if timed_out:
        return FAILED, "the edited program ran past --timeout"
    if status != 0 or after is None:
        return FAILED, f"the edited program exited with status {status}" if status else "no session came back"
    if before.stdout is not None and (after.stdout is None or not after.stdout.same_as(before.stdout)):
        # Compared with the round before, not the recorded run: an output that changes on every run
        # stops the rounds here, and round 1's own stdout verdict stands for the rest.
        return OUTPUT, "its stdout is not the round before's"
    if total_traces(after) >= total_traces(before):
        return NO_GAIN, f"{total_traces(before)} traces before, {total_traces(after)} after"
    return None


def _relative(disk: Path, base: Path) -> str:
    try:
        return disk.resolve().relative_to(base).as_posix()
    except ValueError:
        raise FixError(f"{disk}: outside {base}; not applied") from None


def _combined(originals: dict[str, tuple[str, str, str]], copy: Path, root: Path) -> tuple[FileChange, ...]:
    """One change per edited file of the program's folder: its text before round 1 to the copy's last text."""
    out = []
    for rel, (path, before, encoding) in sorted(originals.items()):
        disk = root / rel
        # A file first edited in a later round: the same path in the program's folder, where a link
        # must not lead the write out of it (round 1's files were checked so by prepare).
        _relative(disk, root)
        try:
            after = read_source_file(copy / rel).text
            now = read_source_file(disk).text
        except (OSError, SourceError) as exc:
            raise FixError(f"{path}: cannot be read after the rounds ({exc.__class__.__name__})") from None
        if now != before:
            # A file first edited in a later round was copied at the start: the folder must still hold it.
            raise FixError(f"{path}: changed while the rounds ran; record the run again")
        if after != before:
            out.append(FileChange(path, disk, before, after, encoding))
    return tuple(out)
