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

if TYPE_CHECKING:
    from tfretrace.fix.applying.apply import Advice, FileChange
    from tfretrace.fix.applying.verify import Verification
    from tfretrace.records.session import Session


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``fix`` subcommand's options."""
    fix = sub.add_parser(
        "fix",
        help="show, apply or verify the checked fix plans of a saved session",
        usage="tfretrace fix SESSION.json [--apply] [--unsafe-fixes] [--root DIR] [--timeout S] "
        "[--link-data PATH] [--also-run 'command ...'] [--verify -- command ...]",
        description="Print each function's fix plan and a unified diff of the safe edits tfretrace can make "
        "itself. --apply writes them (all files or none); --unsafe-fixes adds the edits that may change "
        "results, each with its reason; --verify applies them to a copy of the program, runs the command "
        "there under the monitor and compares the traces, and its stdout with the recorded run's.",
    )
    fix.add_argument("session", metavar="SESSION.json")
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
    from tfretrace.fix.applying.apply import FixError, as_written, prepare, write_all
    from tfretrace.fix.applying.verify import log_path, verify
    from tfretrace.render.text import render_plans

    if ns.also_run and command is None:
        raise FixError("--also-run goes with --verify: tfretrace fix S.json --also-run 'CMD' --verify -- CMD")
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
                        link_data=ns.link_data, status=err, unsafe=ns.unsafe_fixes)
        _print_verification(result, out)
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
        fix = f"{tfretrace_command()} fix {printable(shlex.quote(ns.session))}"
        program = _program_words(session.argv)
        out.write("\n")
        if program:
            # As `run --fix-plan` prints them: checking on a copy first, --apply edits in place.
            check = " ".join(printable(shlex.quote(w)) for w in [*shlex.split(python_command()), *program])
            out.write(f"Check: {fix}{extra} --verify -- {check}\n")
        out.write(f"Apply: {fix} --apply{extra}\n")
    return 0


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
    from tfretrace.fix.applying.other_data import (
        CRASHED,
        EXIT_DIFFERS,
        OUTPUT_DIFFERS,
        SAME,
        UNSTABLE,
        announced_changes,
        run_on_other_data,
    )

    announced = announced_changes(session)
    ok = True
    for command in ns.also_run:
        if not changes:
            break
        result = run_on_other_data(changes, command, root, timeout=ns.timeout, link_data=ns.link_data)
        shown = printable(shlex.join(command))
        detail = {SAME: "same exit status and output", UNSTABLE: "the original prints something else on every "
                  "run, outputs not compared", CRASHED: f"the edited program failed with exit status "
                  f"{result.exit_after}", EXIT_DIFFERS: f"exit status {result.exit_before} -> {result.exit_after}",
                  OUTPUT_DIFFERS: "the output differs"}[result.verdict]
        failed = result.verdict in (CRASHED, EXIT_DIFFERS) or (result.verdict == OUTPUT_DIFFERS and not announced)
        if result.verdict == OUTPUT_DIFFERS:
            detail += f" ({printable(result.first_difference)})"
            if announced:
                detail += f", as the applied steps announce (changes: {', '.join(announced)})"
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
    for o in result.outcomes:
        after = ("did not trace" if o.traces_after is None
                 else f"{plural(o.traces_after, 'trace')}, {o.seconds_after:.3f} s")
        if o.predicted is not None:
            after += f" (predicted {o.predicted})"
        out.write(
            f"  {printable(o.name)} ({printable(o.location)}): {plural(o.traces_before, 'trace')}, "
            f"{o.seconds_before:.3f} s -> {after}\n"
        )


def _record(path: str, result: Verification, err: TextIO) -> None:
    """Store the measured counts as each plan's ``verified`` in the session file itself.

    A session that cannot be rewritten (read-only, its folder gone) only loses this record: the
    measurement was printed, and --apply still runs.
    """
    from tfretrace.fix.applying.apply import mark_verified
    from tfretrace.fix.applying.verify import row_key

    if result.session is None or result.exit_status != 0:
        return
    measured = {row_key(f): f.traces for f in result.session.functions}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        data = mark_verified(data, measured)
        if result.stdout is not None:
            data["verified_output"] = result.stdout.to_dict()
        atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    except (OSError, ValueError) as exc:
        err.write(f"tfretrace fix: the measured counts were not recorded in {printable(path)} "
                  f"({exc.__class__.__name__})\n")

