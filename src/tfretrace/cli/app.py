"""The ``tfretrace`` command line: run a program under the monitor, re-render, explain, lint."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from tfretrace._util.text import one_line
from tfretrace._util.version import __version__
from tfretrace.cli.completion import SHELLS
from tfretrace.cli.output import UsageError, add_output_options, colored, console_for
from tfretrace.cli.output import terminal_style as terminal_style  # (width, colour) of a stream, for callers
from tfretrace.cli.program import EXIT_OK, EXIT_USAGE, Target
from tfretrace.cli.program import EXIT_RETRACED as EXIT_RETRACED  # --fail-on-retrace found something
from tfretrace.render import UnknownFormatError

if TYPE_CHECKING:
    from tfretrace.records import catalogue

# What a shell reports for a process ended by SIGPIPE (128 + 13), the status `cat` gives in `| head`.
EXIT_BROKEN_PIPE = 141


class _Parser(argparse.ArgumentParser):
    """argparse, but errors are one line that names the help command, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# Each subcommand's one-line help, in the order `tfretrace --help` lists them. A command's usage
# and options are added (its module loaded) only when it is the one chosen, or for completion:
# `tfretrace run` and `--help` load neither the fixer's, the comparison's nor the profile's parser.
SUMMARIES = {
    "run": "run a Python program unmodified under the monitor, then report",
    "report": "render saved sessions again (several files are merged, one label per file)",
    "explain": "explain a cause or lint code, with examples",
    "fix": "show, apply or verify the checked fix plans of a saved session",
    "compare": "compare two runs (sessions or a baseline) function by function; exit 1 when one got worse",
    "profile": "merge prevention profiles (or saved sessions) of several workers or runs into one",
    "lint": "check source files statically (see 'tfretrace lint --help')",
    "completion": "print a shell completion script: bash, zsh or fish",
}
COMMANDS = tuple(SUMMARIES)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for all subcommands (``run`` options end at the program).

    ``command``: only that subcommand gets its options (the others are listed with their help,
    their modules not loaded); None gives every one its options, as completion reads them.
    """
    parser = _Parser(
        prog="tfretrace",
        description="Find, explain, fix and prevent tf.function retracing.",
    )
    parser.add_argument("--version", action="version", version=f"tfretrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, summary in SUMMARIES.items():
        chosen = sub.add_parser(name, help=summary)
        if command is None or command == name:
            _CONFIGURE[name](chosen)
    return parser


def _configure_run(run: argparse.ArgumentParser) -> None:
    from tfretrace.cli import run_command

    run_command.configure(run)


def _configure_report(report: argparse.ArgumentParser) -> None:
    report.add_argument("files", nargs="+", metavar="FILE.json")
    add_output_options(report)


def _configure_explain(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("cause", nargs="?", metavar="CAUSE", help="e.g. shape-changed or TFR001")
    explain.add_argument("--list", action="store_true", help="list every code and slug")


def _configure_lint(lint: argparse.ArgumentParser) -> None:
    """None here: the linter owns its options (main hands them over untouched)."""


def _configure_completion(completion: argparse.ArgumentParser) -> None:
    completion.add_argument("shell", choices=SHELLS)


def _configure_fix(fix: argparse.ArgumentParser) -> None:
    from tfretrace.cli import fix_command

    fix_command.configure(fix)


def _configure_compare(compare: argparse.ArgumentParser) -> None:
    from tfretrace.cli import compare_command

    compare_command.configure(compare)


def _configure_profile(profile: argparse.ArgumentParser) -> None:
    from tfretrace.cli import profile_command

    profile_command.configure(profile)


_CONFIGURE: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "run": _configure_run,
    "report": _configure_report,
    "explain": _configure_explain,
    "fix": _configure_fix,
    "compare": _configure_compare,
    "profile": _configure_profile,
    "lint": _configure_lint,
    "completion": _configure_completion,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tfretrace`` and ``python -m tfretrace``; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "lint":
            # The linter owns its options; hand them over untouched.
            lint_cli = importlib.import_module("tfretrace.cli.lint_command")
            return int(lint_cli.main(args[1:]))
        parser = build_parser(args[0] if args else "")
        target: Target | None = None
        if args and args[0] == "run":
            options, target = split_run_args(args[1:], parser)
            args = ["run", *options]
        verify_command: list[str] | None = None
        if args and args[0] == "fix":
            from tfretrace.cli import fix_command

            args, verify_command = fix_command.split_verify(args)
        try:
            ns = parser.parse_args(args)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0)
        if ns.command == "run":
            from tfretrace.cli.run_command import command_run  # the monitor's side loads to run only

            assert target is not None
            return command_run(ns, target)
        if ns.command == "report":
            return command_report(ns)
        if ns.command == "explain":
            return command_explain(ns)
        if ns.command == "compare":
            from tfretrace.cli import compare_command

            return compare_command.command_compare(ns, sys.stdout)
        if ns.command == "completion":
            return command_completion(ns)
        if ns.command == "profile":
            from tfretrace.cli import profile_command

            return profile_command.command_profile(ns, sys.stdout, sys.stderr)
        if ns.command == "fix":
            from tfretrace.cli import fix_command
            from tfretrace.fix.applying.apply import FixError  # the fixer loads only for `fix`

            out = console_for(sys.stdout)
            width, color = out.width, colored(out)
            try:
                return fix_command.command_fix(ns, verify_command, sys.stdout, sys.stderr, width, color)
            except FixError as exc:
                print(f"tfretrace: error: {one_line(str(exc))}", file=sys.stderr)
                return EXIT_USAGE
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        command = args[0] if args and args[0] in COMMANDS else ""
        helper = " ".join(filter(None, ["tfretrace", command, "--help"]))
        hint = f" (see '{helper}')" if exc.hint else ""
        print(f"tfretrace: error: {one_line(str(exc))}{hint}", file=sys.stderr)
        return EXIT_USAGE
    except _bad_input() as exc:  # evaluated only when an exception gets here
        print(f"tfretrace: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return _reader_went_away()


def _bad_input() -> tuple[type[Exception], ...]:
    """The errors that are bad input (one line, exit 2) besides UsageError: an unreadable session,
    an unknown report format, a bad project setting. Looked up when an error is raised, so that
    the session model and the settings reader load for the commands that use them, not for all."""
    from tfretrace._util.config import ProjectConfigError
    from tfretrace.records.session import SessionFormatError

    return (SessionFormatError, UnknownFormatError, ProjectConfigError)


def _reader_went_away() -> int:
    """``tfretrace report x.json | head``: the reader closed the pipe; end quietly like cat does.

    Both streams point at /dev/null from here on, so the interpreter's final flush cannot
    raise a second BrokenPipeError while exiting.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def split_run_args(
    tokens: Sequence[str], parser: argparse.ArgumentParser
) -> tuple[list[str], Target]:
    """Split ``run``'s tokens into tfretrace options and the program with its own arguments.

    Everything after the script (or ``-m module``) belongs to the program, even ``--save``:
    that is what python does, and argparse alone would steal such options.
    """
    takes_value = _options_taking_value(parser)
    options: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            i += 1
            break
        if token == "-m" or (token.startswith("-m") and not token.startswith("--")):
            module = token[2:] or (tokens[i + 1] if i + 1 < len(tokens) else "")
            rest = tokens[i + (1 if token[2:] else 2) :]
            if not module:
                raise UsageError("-m needs a module name")
            return options, Target(None, module, tuple(rest))
        if not token.startswith("-") or token == "-":
            break
        options.append(token)
        if token in takes_value and "=" not in token:
            if i + 1 >= len(tokens):
                raise UsageError(f"{token} needs a value")
            options.append(tokens[i + 1])
            i += 1
        i += 1
    if i >= len(tokens):
        if "-h" in options or "--help" in options:
            return options, Target(None, None, ())
        raise UsageError("run needs a script or -m module (tfretrace run [options] script.py ...)")
    return options, Target(tokens[i], None, tuple(tokens[i + 1 :]))


def _options_taking_value(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        choices = action.choices if isinstance(action.choices, Mapping) else {}
        run = choices.get("run")
        if run is not None:
            return {s for a in run._actions if a.nargs != 0 for s in a.option_strings}
    return set()


def command_report(ns: argparse.Namespace) -> int:
    """Load, merge and render saved sessions."""
    from tfretrace.cli.output import checked_outputs, emit
    from tfretrace.cli.run_command import final_status
    from tfretrace.fix.planning.step import checked_plans
    from tfretrace.records.session import load, merge

    outputs = checked_outputs(ns.output, ns.format, stdout=True, reads=ns.files)
    _refuse_duplicates(ns.files)

    # The files come from elsewhere: each step's safety is checked against its kind before drawing.
    session = checked_plans(merge([load(path) for path in ns.files]))
    written = emit(session, ns, console_for(sys.stdout), None, outputs, sources=list(ns.files))
    return final_status(EXIT_OK, session, ns, sys.stderr) if written else EXIT_USAGE


def _refuse_duplicates(paths: Sequence[str]) -> None:
    """Merging a session with itself would count its traces twice: one line, exit 2."""
    import hashlib

    seen: dict[str, str] = {}
    for path in paths:
        try:
            content = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            continue  # load() reports the unreadable file with its own line
        if content in seen:
            raise UsageError(f"{path!r} is the same session as {seen[content]!r}: give each worker's file once")
        seen[content] = path


def command_completion(ns: argparse.Namespace) -> int:
    """Print the completion script for the shell named."""
    from tfretrace.cli.completion import options_by_command
    from tfretrace.cli.completion import script as completion_script
    from tfretrace.records import catalogue

    lint_cli = importlib.import_module("tfretrace.cli.lint_command")
    # Every subcommand's options, each command module loaded: the script completes them all.
    commands = options_by_command(build_parser(), lint_cli.build_parser())
    causes = sorted({k for e in catalogue.entries() for k in (e.code, e.slug)})
    sys.stdout.write(completion_script(ns.shell, commands, causes))
    return EXIT_OK


def command_explain(ns: argparse.Namespace) -> int:
    """Print one catalogue entry: title, why, fix, and a bad and a good example."""
    from tfretrace.records import catalogue

    if ns.list or not ns.cause:
        for entry in catalogue.entries():
            print(f"{entry.code}  {entry.slug:<28} {entry.title}")
        return EXIT_OK if ns.list else EXIT_USAGE
    try:
        entry = catalogue.get(ns.cause)
    except KeyError:
        import difflib

        keys = [k for e in catalogue.entries() for k in (e.code, e.slug)]
        close = difflib.get_close_matches(ns.cause, keys, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else " (see 'tfretrace explain --list')"
        raise UsageError(f"unknown cause {ns.cause!r}{hint}", hint=False) from None
    from tfretrace.render.explain import WIDTH
    from tfretrace.render.explain import explanation as render_explanation

    console = console_for(sys.stdout)
    console.file.write(render_explanation(entry, width=min(console.width, WIDTH), color=colored(console)) + "\n")
    return EXIT_OK


def explanation(entry: catalogue.Cause, width: int = 88) -> str:
    """The text ``tfretrace explain`` prints for one entry (without colour; 88 is render.explain.WIDTH)."""
    from tfretrace.render.explain import explanation as render_explanation

    return render_explanation(entry, width=width)
