"""`tfretrace fix SESSION.json`: print the plans and their diff, apply them, or verify them by a run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from tfretrace._io import atomic_write_text
from tfretrace._text import printable
from tfretrace.fix.apply import Advice, FileChange, FixError, mark_verified, prepare, unified_diff, write_all
from tfretrace.fix.verify import Verification, row_key, verify
from tfretrace.render.text import render_plans
from tfretrace.session import load


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``fix`` subcommand's options."""
    fix = sub.add_parser(
        "fix",
        help="show, apply or verify the checked fix plans of a saved session",
        usage="tfretrace fix SESSION.json [--apply] [--root DIR] [--verify -- command ...]",
        description="Print each function's fix plan and a unified diff of the edits tfretrace can make "
        "itself. --apply writes them (all files or none); --verify applies them to a copy of the "
        "program, runs the command there under the monitor and compares the traces.",
    )
    fix.add_argument("session", metavar="SESSION.json")
    fix.add_argument("--apply", action="store_true", help="write the edits into the program's files")
    fix.add_argument("--root", metavar="DIR", help="the folder the session's paths start from (default: as recorded)")
    fix.add_argument(
        "--verify", action="store_true",
        help="last option: apply the edits to a copy of the program and run the command after -- there, monitored",
    )


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
    session = load(ns.session)
    root = Path(ns.root or session.root or ".")
    changes, advice = prepare(session, root)
    out.write(render_plans(session, width=width, color=color).rstrip() + "\n")
    _print_changes(changes, advice, out)
    if command is not None:
        if not command:
            raise FixError("--verify needs the command that runs the program: --verify -- python train.py")
        result = verify(session, changes, command, root.resolve())
        _print_verification(result, out)
        _record(ns.session, result)
        if result.exit_status != 0:
            err.write(f"tfretrace fix: the edited program exited with status {result.exit_status}\n")
            if result.stderr_tail:
                err.write(printable(result.stderr_tail) + "\n")
            return 1
    if ns.apply:
        if not changes:
            out.write("\nNothing to apply.\n")
            return 0
        written = write_all(changes)
        out.write(f"\nApplied: {len(written)} file(s) changed: {', '.join(printable(c.path) for c in changes)}\n")
    elif changes and command is None:
        out.write(f"\nApply: tfretrace fix {printable(ns.session)} --apply\n")
    return 0


def _print_changes(changes: list[FileChange], advice: list[Advice], out: TextIO) -> None:
    if changes:
        out.write("\n" + printable(unified_diff(changes)))
    else:
        out.write("\nNo edit tfretrace can make by itself.\n")
    if advice:
        out.write("\nBy hand (not in the diff):\n")
        for item in advice:
            out.write(f"  {printable(item.where)}: {printable(item.function)}: {printable(item.summary)}\n")


def _print_verification(result: Verification, out: TextIO) -> None:
    out.write(f"\nVerified on a copy: the program exited {result.exit_status}\n")
    if result.session is None:
        out.write("  no session came back from the edited run\n")
        return
    for o in result.outcomes:
        after = "did not trace" if o.traces_after is None else f"{o.traces_after} traces, {o.seconds_after:.3f} s"
        if o.predicted is not None:
            after += f" (predicted {o.predicted})"
        out.write(
            f"  {printable(o.name)} ({printable(o.location)}): {o.traces_before} traces, "
            f"{o.seconds_before:.3f} s -> {after}\n"
        )


def _record(path: str, result: Verification) -> None:
    """Store the measured counts as each plan's ``verified`` in the session file itself."""
    if result.session is None or result.exit_status != 0:
        return
    measured = {row_key(f): f.traces for f in result.session.functions}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    atomic_write_text(path, json.dumps(mark_verified(data, measured), indent=2) + "\n")

