"""`tfretrace fix SESSION.json`: print the plans and their diff, apply them, or verify them by a run."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tfretrace._util.config import find as find_config
from tfretrace._util.config import load as load_config
from tfretrace._util.io import atomic_write_text
from tfretrace._util.text import plural, printable
from tfretrace.cli.invocation import python_command, tfretrace_command
from tfretrace.records.session import load

# How many rounds ``fix --verify`` makes unless ``--rounds`` says otherwise, round 1 included
# (fix.applying.converge): enough for a hoist and then the step its live function allows.
ROUNDS = 3

if TYPE_CHECKING:
    from tfretrace.fix.applying.apply import Advice, FileChange
    from tfretrace.fix.applying.verify import Verification
    from tfretrace.records.session import Session


def configure(fix: argparse.ArgumentParser) -> None:
    """The ``fix`` subcommand's usage, description and options (its one-line help is app.SUMMARIES')."""
    fix.usage = (
        "tfretrace fix [SESSION.json] [--apply] [--unsafe-fixes] [--root DIR] [--timeout S] "
        "[--link-data PATH] [--also-run 'command ...'] [--rounds N] [--verify -- command ...]"
    )
    fix.description = (
        "Print each function's fix plan and a unified diff of the safe edits tfretrace can make "
        "itself. --apply writes them (all files or none); --unsafe-fixes adds the edits that may change "
        "results, each with its reason; --verify applies them to a copy of the program, runs the command "
        "there under the monitor and compares the traces, and its stdout with the recorded run's, then plans "
        "again from that run, edits the copy and runs it, until a round removes no trace (--rounds); with --apply "
        "every kept round's edits are written at once."
    )
    fix.add_argument(
        "session", metavar="SESSION.json", nargs="?", default=None,
        help="a saved session (default: the last run's, kept in the project's .tfretrace/ folder)",
    )
    fix.add_argument("--apply", action="store_true", help="write the safe edits into the program's files")
    fix.add_argument(
        "--unsafe-fixes", action="store_true",
        help="also make the unsafe edits (they may change results in cases tfretrace cannot rule out; "
        "each one's reason is printed)",
    )
    fix.add_argument(
        "--root", metavar="DIR",
        help="the program's folder: the session's paths start there and no edit leaves it (default: here)",
    )
    fix.add_argument(
        "--timeout", metavar="SECONDS", type=_seconds,
        help="with --verify: stop the edited program after this long (it counts as failed)",
    )
    fix.add_argument(
        "--link-data", metavar="PATH", action="append", default=[],
        help="with --verify: a file or folder the program only reads, linked into the copy rather than copied "
        "(it is checked afterwards that the run changed none of it)",
    )
    fix.add_argument(
        "--also-run", metavar="COMMAND", action="append", default=[], type=_command,
        help="with --verify: also run this command (another seed or data size, e.g. 'python train.py --seed 2') "
        "as written and edited, in a copy; the edited program must exit the same and print the same",
    )
    fix.add_argument(
        "--rounds", metavar="N", type=_rounds, default=None,
        help=f"with --verify: at most N rounds of plan, edit the copy, run it (default {ROUNDS}; 1: only the "
        "recorded run's plan)",
    )
    fix.add_argument(
        "--verify", action="store_true",
        help="last option: apply the edits to a copy of the program and run the command after -- there, monitored "
        "(traces before -> after; stdout: same, differs, unstable or not-recorded)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"not a usable number of seconds: {text!r}")
    return value


def _rounds(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 10:
        raise argparse.ArgumentTypeError(f"not a number of rounds from 1 to 10: {text!r}")
    return int(text)


def _command(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split {text!r} into words ({exc})") from None
    if not words:
        raise argparse.ArgumentTypeError("an empty command")
    return words


def split_verify(args: list[str]) -> tuple[list[str], list[str] | None]:
    """``fix`` arguments and the command after ``--verify [--]`` (argparse cannot take it verbatim)."""
    if "--verify" not in args:
        return args, None
    at = args.index("--verify")
    command = args[at + 1 :]
    if command and command[0] == "--":
        command = command[1:]
    return args[: at + 1], command


def command_fix(
    ns: argparse.Namespace, command: list[str] | None, out: TextIO, err: TextIO, width: int, color: bool
) -> int:
    """Run ``tfretrace fix``; FixError and session errors become one line and exit status 2."""
    # The fixer and the renderer load here: `tfretrace --help` and the other commands skip them.
    from tfretrace.fix.applying.apply import FixError, as_written, prepare, unified_diff, write_all
    from tfretrace.fix.applying.verify import log_path, verify
    from tfretrace.render.text import render_plans

    if ns.also_run and command is None:
        raise FixError("--also-run goes with --verify: tfretrace fix S.json --also-run 'CMD' --verify -- CMD")
    if ns.rounds is not None and command is None:
        raise FixError("--rounds goes with --verify: rounds run the program (tfretrace fix S.json --rounds N "
                       "--verify -- CMD)")
    implicit = ns.session is None
    if implicit:
        ns.session = _last_session()
    session = load(ns.session)
    # The program is here, at --root or at the project's [tool.tfretrace.fix] root (the user's own
    # settings): never where the session says, a session being data.
    configured = load_config(find_config(Path.cwd())).fix.root
    root = Path(ns.root or configured or Path.cwd())
    if not root.is_dir():
        raise FixError(f"--root {printable(str(root))}: not a folder")
    changes, advice = prepare(session, root, unsafe=ns.unsafe_fixes)
    out.write(render_plans(as_written(session), width=width, color=color).rstrip() + "\n")
    _print_changes(changes, advice, out)
    if command is not None:
        if not command:
            raise FixError("--verify needs the command that runs the program: --verify -- python train.py")
        result = verify(session, changes, command, root.resolve(), log=log_path(ns.session), timeout=ns.timeout,
                        link_data=ns.link_data, status=err, unsafe=ns.unsafe_fixes,
                        converge=ns.rounds or ROUNDS)
        _print_verification(result, out)
        if any(r.kept for r in result.rounds[1:]):
            # Later rounds edited more: from here on the changes are every kept round's together.
            changes = list(result.changes)
            out.write("\nEvery kept round's edits together" + (" (written below)" if ns.apply else "")
                      + ":\n" + printable(unified_diff(changes)))
        _record(ns.session, result, err)
        if result.changed_data:
            err.write(f"tfretrace fix: the run changed linked data it should only read: "
                      f"{printable(', '.join(result.changed_data[:5]))}\n")
        if result.exit_status != 0 or result.changed_data:
            why = f"ran past --timeout {ns.timeout:g} s and was stopped" if result.timed_out else \
                f"exited with status {result.exit_status}"
            err.write(f"tfretrace fix: the edited program {why} (output: {printable(str(result.log))})\n")
            if result.stderr_tail:
                err.write(printable(result.stderr_tail) + "\n")
            return 1
        if not _on_other_data(ns, session, changes, root.resolve(), out, err):
            return 1
    if ns.apply:
        if not changes:
            out.write("\nNothing to apply.\n")
            return 0
        written = write_all(changes)
        out.write(f"\nApplied: {len(written)} file(s) changed: {', '.join(printable(c.path) for c in changes)}\n")
    elif changes and command is None:
        extra = " --unsafe-fixes" if ns.unsafe_fixes else ""
        fix = f"{tfretrace_command()} fix" + ("" if implicit else f" {printable(shlex.quote(ns.session))}")
        program = _program_words(session.argv)
        out.write("\n")
        if program:
            # As `run --fix-plan` prints them: checking on a copy first, --apply edits in place.
            check = " ".join(printable(shlex.quote(w)) for w in [*shlex.split(python_command()), *program])
            out.write(f"Check: {fix}{extra} --verify -- {check}\n")
        out.write(f"Apply: {fix} --apply{extra}\n")
    return 0


def _last_session() -> str:
    """The session the project's last run kept (as ``tfretrace run`` names it from here); FixError if none."""
    from tfretrace.cli import last_session
    from tfretrace.fix.applying.apply import FixError

    here = Path.cwd()
    kept = last_session.project_folder(here) / last_session.FOLDER / last_session.NAME
    if not kept.is_file():
        raise FixError(f"no SESSION.json given and no last run kept here ({last_session.shown(kept, here)}): "
                       "run `tfretrace run PROGRAM` first, or name a session saved with --save")
    return last_session.shown(kept, here)


def _program_words(argv: tuple[str, ...]) -> list[str]:
    """The words after ``python`` that run the session's program again, or [] where it is unknown."""
    if not argv or not argv[0]:
        return []
    first, rest = argv[0], list(argv[1:])
    # `run -m pkg.mod` records its program as the one word "-m pkg.mod".
    if first.startswith("-m "):
        return ["-m", first.removeprefix("-m "), *rest]
    return [first, *rest]


def _on_other_data(ns: argparse.Namespace, session: Session, changes: list[FileChange], root: Path,
                   out: TextIO, err: TextIO) -> bool:
    """Each --also-run command as written and edited; False when the edit broke or changed it unannounced."""
    from tfretrace.fix.applying.announced import applied_changes
    from tfretrace.fix.applying.other_data import (
        CRASHED,
        EXIT_DIFFERS,
        OUTPUT_DIFFERS,
        SAME,
        UNSTABLE,
        run_on_other_data,
    )

    # Only the steps this --verify applied announce anything (the unsafe ones with --unsafe-fixes).
    announced = sorted(applied_changes(session.functions, unsafe=ns.unsafe_fixes))
    ok = True
    for command in ns.also_run:
        if not changes:
            break
        result = run_on_other_data(changes, command, root, timeout=ns.timeout, link_data=ns.link_data,
                                   announced=announced)
        shown = printable(shlex.join(command))
        detail = {SAME: "same exit status and output", UNSTABLE: "the original prints something else on every "
                  "run, outputs not compared", CRASHED: f"the edited program failed with exit status "
                  f"{result.exit_after}", EXIT_DIFFERS: f"exit status {result.exit_before} -> {result.exit_after}",
                  OUTPUT_DIFFERS: "the output differs"}[result.verdict]
        unexplained = result.verdict == OUTPUT_DIFFERS and not result.excused_by
        failed = result.verdict in (CRASHED, EXIT_DIFFERS) or unexplained
        if result.verdict == OUTPUT_DIFFERS:
            detail += f" ({printable(result.first_difference)})"
            if result.excused_by:
                detail += f", as the applied steps announce (changes: {', '.join(result.excused_by)})"
            elif announced:  # float-last-digits, and the numbers moved by more than their last digits
                detail += f", more than the applied steps announce (changes: {', '.join(announced)})"
        # The verdict is a fixed word (same, crashed, exit-differs, output-differs, unstable): scripts read it.
        out.write(f"Other data, {shown}: {result.verdict}: {detail}\n")
        if failed:
            ok = False
            err.write(f"tfretrace fix: on other data ({shown}): {detail}\n")
            if result.stderr_tail:
                err.write(printable(result.stderr_tail) + "\n")
    return ok


def _print_changes(changes: list[FileChange], advice: list[Advice], out: TextIO) -> None:
    from tfretrace.fix.applying.apply import unified_diff

    if changes:
        out.write("\n" + printable(unified_diff(changes)))
    else:
        out.write("\nNo edit tfretrace can make by itself.\n")
    hand = [a for a in advice if a.unsafe_reason is None]
    if hand:
        out.write("\nBy hand (not in the diff):\n")
        for item in hand:
            out.write(f"  {printable(item.where)}: {printable(item.function)}: {printable(item.summary)}\n")
    unsafe = [a for a in advice if a.unsafe_reason is not None]
    if unsafe:
        applied = unsafe[0].applied
        out.write(
            "\nUnsafe, in the diff (--unsafe-fixes): each may change results:\n" if applied else
            f"\n{len(unsafe)} unsafe edit(s) not in the diff; --unsafe-fixes makes them (each may change results):\n"
        )
        for item in unsafe:
            out.write(f"  {printable(item.where)}: {printable(item.function)}: {printable(item.summary)}\n"
                      f"      unsafe: {printable(str(item.unsafe_reason))}\n")


def _print_verification(result: Verification, out: TextIO) -> None:
    out.write(
        f"\nVerified on a copy in {result.seconds:.1f} s: the program exited {result.exit_status} "
        f"(its output: {printable(str(result.log))})\n"
    )
    if result.stdout is not None:
        # The verdict is a fixed word (same, differs, unstable, not-recorded, not-measured): scripts read it.
        out.write(f"  stdout: {result.stdout.describe()}\n")
    if result.session is None:
        out.write("  no session came back from the edited run\n")
        return
    if result.rounds:
        _print_rounds(result, out)
    later = any(r.kept for r in result.rounds[1:])
    for o in result.outcomes:
        after = ("did not trace" if o.traces_after is None
                 else f"{plural(o.traces_after, 'trace')}, {o.seconds_after:.3f} s")
        if o.predicted is not None:
            # The session's plan is round 1's: later rounds were planned from the runs after it.
            after += f" (predicted {o.predicted}{' after round 1' if later else ''})"
        out.write(
            f"  {printable(o.name)} ({printable(o.location)}): {plural(o.traces_before, 'trace')}, "
            f"{o.seconds_before:.3f} s -> {after}\n"
        )


def _print_rounds(result: Verification, out: TextIO) -> None:
    """Each round: what it edited, every function's traces before -> after (the monitor's count of
    TensorFlow's traces), kept or taken back; then why the rounds stopped (a fixed word)."""
    out.write("  rounds (each planned from the run before it; traces of every function):\n")
    for r in result.rounds:
        after = "no session" if r.traces_after is None else str(r.traces_after)
        state = "" if r.kept else f", taken back (exit status {r.exit_status})" if r.exit_status else ", taken back"
        out.write(f"    round {r.number}: {printable(', '.join(r.kinds) or 'no step')} in "
                  f"{printable(', '.join(r.files))}: {r.traces_before} -> {after}{state}\n")
    out.write(f"  rounds stopped: {result.stopped} ({printable(result.stopped_detail)})\n")


def _record(path: str, result: Verification, err: TextIO) -> None:
    """Store the measured counts as each plan's ``verified`` in the session file itself.

    A session that cannot be rewritten (read-only, its folder gone) only loses this record: the
    measurement was printed, and --apply still runs.
    """
    from tfretrace.fix.applying.apply import mark_verified
    from tfretrace.fix.applying.verify import row_key

    # With rounds, round 1's run: it measured the plan this session holds, later rounds plan anew.
    measured_by = result.rounds[0].session if result.rounds else result.session
    if measured_by is None or result.exit_status != 0:
        return
    measured = {row_key(f): f.traces for f in measured_by.functions}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        data = mark_verified(data, measured)
        if result.stdout is not None:
            data["verified_output"] = result.stdout.to_dict()
        atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    except (OSError, ValueError) as exc:
        err.write(f"tfretrace fix: the measured counts were not recorded in {printable(path)} "
                  f"({exc.__class__.__name__})\n")

