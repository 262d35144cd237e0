"""The run report's closing lines: the commands that check its plans on a copy, then apply them."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from tfretrace._util.text import printable
from tfretrace.cli.invocation import fold_command, python_command, tfretrace_command
from tfretrace.cli.output import colored
from tfretrace.cli.program import Target

if TYPE_CHECKING:
    from rich.console import Console

    from tfretrace.records.session import Session


def emit_plans(session: Session, console: Console, saved: str | None, target: Target | None = None, *,
               implicit: bool = False) -> None:
    """The fix plans, then the commands that verify their edits on a copy and apply them."""
    from tfretrace.render.text import render_plans

    stream, width, color = console.file, console.width, colored(console)
    print("\n" + render_plans(session, width=width, color=color, saved=saved is not None).rstrip(), file=stream)
    emit_next(session, console, saved, target, implicit=implicit)


def emit_next(session: Session, console: Console, saved: str | None, target: Target | None = None, *,
              implicit: bool = False) -> None:
    """The report's last lines: the commands that check the plans' edits on a copy, then apply them.

    ``implicit``: ``saved`` is the project's kept last session, which ``tfretrace fix`` reads unnamed.
    """
    stream, width = console.file, console.width
    editable = any(step.get("edits") for f in session.functions for step in f.plan)
    tool = shlex.split(tfretrace_command())
    if saved is None and editable:
        # Nothing was saved, so there is no session for tfretrace fix to read: say how to get one.
        print("\nTo apply: run again with --save run.json, then", file=stream)
        print(fold_command("  ", [shlex.quote(w) for w in [*tool, "fix", "run.json", "--apply"]], width), file=stream)
    if saved is not None and editable:
        # Spelled as they run here (`make demo` calls .venv/bin/tfretrace without activating
        # .venv), and folded with a backslash where wider than the terminal: pasted, they still run.
        lines = []
        program = [] if target is None else (
            ["-m", target.module] if target.script is None else [target.script]) + list(target.args)
        steps = [step for f in session.functions for step in f.plan]
        if session.probe_traces is None and any(step.get("unasked") is True for step in steps):
            # A plain run asked TensorFlow nothing (it reruns none of the program's code): the
            # next command is the run that asks, whose report ends with these lines again.
            if program:
                ask = [*tool, "run", "--fix-plan", *program]
                lines.append(fold_command("Check: ", [printable(shlex.quote(w)) for w in ask], width))
        elif program:
            # Checking on a copy comes first: --apply edits the program's files in place.
            named = [] if implicit else [saved]
            check = [*tool, "fix", *named, "--verify", "--", *shlex.split(python_command()), *program]
            lines.append(fold_command("Check: ", [printable(shlex.quote(w)) for w in check], width))
        if any(step.get("safety") == "safe" and step.get("edits") for step in steps):
            apply = [*tool, "fix", *([] if implicit else [saved]), "--apply"]
            lines.append(fold_command("Apply: ", [printable(shlex.quote(w)) for w in apply], width))
        if lines:
            print("\n".join(lines), file=stream)  # right under the footer, as its last lines
    stream.flush()
