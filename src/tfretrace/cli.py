"""The ``tfretrace`` command line: run a program under the monitor, re-render, explain, lint."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import importlib.util
import os
import runpy
import shlex
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn, TextIO

from tfretrace import __version__, catalogue
from tfretrace.errors import TensorFlowMissingError
from tfretrace.render import UnknownFormatError, renderer_for
from tfretrace.render._model import hide_below
from tfretrace.render.text import TextRenderer
from tfretrace.session import Session, SessionFormatError, load, merge

EXIT_OK = 0
# --fail-on-retrace uses the status linters use for "found something"; the program's own
# non-zero status always wins, so a crash is never reported as "only" a retrace.
EXIT_RETRACED = 1
EXIT_USAGE = 2
COMMANDS = ("run", "report", "explain", "lint")


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but errors are one line that names the help command, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for all subcommands (``run`` options end at the program)."""
    parser = _Parser(
        prog="tfretrace",
        description="Find, explain, fix and prevent tf.function retracing.",
    )
    parser.add_argument("--version", action="version", version=f"tfretrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="run a Python program unmodified under the monitor, then report",
        usage="tfretrace run [options] (script.py | -m module) [args ...]",
        description="Run 'script.py [args]' or '-m module [args]' like python does, under the "
        "retrace monitor, then print the report to stderr (stdout stays the program's).",
    )
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module like python -m")
    run.add_argument("--save", metavar="FILE.json", help="keep the session in this file")
    run.add_argument("--warn", action="store_true", help="also warn live at each retrace")
    run.add_argument("--label", help="name of this process in merged reports (default workerN)")
    _add_output_options(run)
    run.add_argument("program", nargs=argparse.REMAINDER, metavar="script.py [args ...]")

    report = sub.add_parser(
        "report",
        help="render saved sessions again (several files are merged, one label per file)",
    )
    report.add_argument("files", nargs="+", metavar="FILE.json")
    _add_output_options(report)

    explain = sub.add_parser("explain", help="explain a cause or lint code, with examples")
    explain.add_argument("cause", nargs="?", metavar="CAUSE", help="e.g. shape-changed or TFR001")
    explain.add_argument("--list", action="store_true", help="list every code and slug")

    sub.add_parser("lint", help="check source files statically (see 'tfretrace lint --help')")
    return parser


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        action="append",
        default=[],
        metavar="FILE",
        help="write the report to FILE; .txt, .json or .html picks the format (repeatable)",
    )
    parser.add_argument(
        "--min-traces", type=_positive_int, default=1, metavar="N",
        help="hide functions with fewer than N traces",
    )
    parser.add_argument(
        "--fail-on-retrace", action="store_true",
        help="exit with status 1 when any function retraced beyond its first trace",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tfretrace`` and ``python -m tfretrace``; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "lint":
            # The linter owns its options; hand them over untouched.
            lint_cli = importlib.import_module("tfretrace.lint.cli")
            return int(lint_cli.main(args[1:]))
        parser = build_parser()
        target: Target | None = None
        if args and args[0] == "run":
            options, target = split_run_args(args[1:], parser)
            args = ["run", *options]
        try:
            ns = parser.parse_args(args)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0)
        if ns.command == "run":
            assert target is not None
            return command_run(ns, target)
        if ns.command == "report":
            return command_report(ns)
        if ns.command == "explain":
            return command_explain(ns)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        command = args[0] if args and args[0] in COMMANDS else ""
        helper = " ".join(filter(None, ["tfretrace", command, "--help"]))
        print(f"tfretrace: error: {exc} (see '{helper}')", file=sys.stderr)
        return EXIT_USAGE
    except (SessionFormatError, UnknownFormatError) as exc:
        print(f"tfretrace: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


@dataclass(frozen=True)
class Target:
    """What ``run`` executes: a script path or a module name, and the argv after it."""

    script: str | None
    module: str | None
    args: tuple[str, ...]


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


def command_run(ns: argparse.Namespace, target: Target) -> int:
    """Run the program under the monitor; report and save even when it fails."""
    for output in ns.output:
        renderer_for(output)  # fail on a bad -o before spending minutes on the program
    if target.script is not None and not Path(target.script).is_file():
        raise UsageError(f"can't open file {target.script!r}: no such file")
    if target.module is not None and _find_module(target.module) is None:
        raise UsageError(f"no module named {target.module!r}")
    monitor = importlib.import_module("tfretrace.monitor")
    strict = importlib.import_module("tfretrace.budget").strict_from_env
    try:
        installed = monitor.install(warn=ns.warn)
        # TFRETRACE_STRICT=N turns every function into a budget of N traces for unmodified scripts.
        strict(installed)
    except (TensorFlowMissingError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else "TensorFlow is not installed"
        with contextlib.suppress(RuntimeError):
            monitor.stop()
        raise UsageError(first) from None
    try:
        status = execute(target)
    finally:
        session: Session = monitor.stop()
    # The monitor sees tfretrace's own argv once the program is done; record the program's.
    program = target.script if target.script is not None else f"-m {target.module}"
    session = replace(session, argv=(program, *target.args), label=ns.label or session.label)
    sys.stdout.flush()
    saved = _save(session, ns.save)
    emit(session, ns, sys.stderr, saved)
    return _final_status(status, session, ns, sys.stderr)


def _find_module(name: str) -> object | None:
    """The module's spec, looked up from the working directory like ``python -m`` does."""
    saved = sys.path[0] if sys.path else None
    _set_path0(os.getcwd())
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    finally:
        if saved is not None:
            _set_path0(saved)


def execute(target: Target) -> int:
    """Run the target as ``python`` would: same argv, ``__main__``, sys.path[0] and status."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        if target.module is not None:
            sys.argv = [target.module, *target.args]  # run_module puts the file path here
            _set_path0(os.getcwd())
            runpy.run_module(target.module, run_name="__main__", alter_sys=True)
        else:
            assert target.script is not None
            sys.argv = [target.script, *target.args]
            _set_path0(str(Path(target.script).resolve().parent))
            runpy.run_path(target.script, run_name="__main__")
        return EXIT_OK
    except SystemExit as exc:
        return exit_status(exc.code)
    except KeyboardInterrupt as exc:
        _print_user_traceback(exc)
        return 130
    except BaseException as exc:
        _print_user_traceback(exc)
        return 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            _set_path0(saved_path0)


def _set_path0(entry: str) -> None:
    if sys.path:
        sys.path[0] = entry
    else:
        sys.path.append(entry)


def exit_status(code: object) -> int:
    """The status python gives ``sys.exit(code)``: None is 0, a message is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_user_traceback(exc: BaseException) -> None:
    """Print the traceback python would, without tfretrace's and runpy's own frames."""
    tb = exc.__traceback__
    ours = (__file__, runpy.__file__)
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    sys.stdout.flush()
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


def _save(session: Session, path: str | None) -> Path | None:
    """Save to ``--save`` or, so the re-render hint always works, to a temporary file."""
    try:
        if path is not None:
            return session.save(path)
        fd, tmp = tempfile.mkstemp(prefix="tfretrace-", suffix=".json")
        os.close(fd)
        return session.save(tmp)
    except OSError as exc:
        print(f"tfretrace: could not save the session: {exc}", file=sys.stderr)
        return None


def command_report(ns: argparse.Namespace) -> int:
    """Load, merge and render saved sessions."""
    for output in ns.output:
        renderer_for(output)
    session = merge([load(path) for path in ns.files])
    emit(session, ns, sys.stdout, None, sources=list(ns.files))
    return _final_status(EXIT_OK, session, ns, sys.stderr)


def emit(
    session: Session,
    ns: argparse.Namespace,
    stream: TextIO,
    saved: Path | None,
    sources: list[str] | None = None,
) -> None:
    """Write each ``-o`` file, or the terminal report followed by the re-render command."""
    view = hide_below(session, ns.min_traces)
    for output in ns.output:
        Path(output).write_text(renderer_for(output).render(view), encoding="utf-8")
        print(f"tfretrace: wrote {output}", file=sys.stderr)
    if ns.output:
        return
    width, color = terminal_style(stream, os.environ)
    stream.write(TextRenderer(width=width, color=color).render(view))
    files = sources if sources is not None else ([str(saved)] if saved else [])
    if files:
        quoted = " ".join(shlex.quote(f) for f in files)
        print(f"\nRe-render: tfretrace report {quoted} -o report.html", file=stream)
    stream.flush()


def terminal_style(stream: TextIO, environ: Mapping[str, str]) -> tuple[int, bool]:
    """Width and colour for ``stream``: FORCE_COLOR, then NO_COLOR, then whether it is a tty."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if environ.get("FORCE_COLOR"):
        color = True
    elif environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        color = False
    else:
        color = tty
    width = 100
    if environ.get("COLUMNS", "").isdigit():
        width = int(environ["COLUMNS"])
    elif tty:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            width = os.get_terminal_size(stream.fileno()).columns
    return width, color


def _final_status(status: int, session: Session, ns: argparse.Namespace, err: TextIO) -> int:
    """The program's status, or EXIT_RETRACED under --fail-on-retrace when something retraced."""
    if status != EXIT_OK or not ns.fail_on_retrace:
        return status
    retracing = [f for f in session.functions if f.retraces > 0]
    if not retracing:
        return status
    names = ", ".join(f.display_name() for f in retracing[:3])
    more = f" and {len(retracing) - 3} more" if len(retracing) > 3 else ""
    print(f"tfretrace: retracing found in {names}{more} (--fail-on-retrace)", file=err)
    return EXIT_RETRACED


def command_explain(ns: argparse.Namespace) -> int:
    """Print one catalogue entry: title, why, fix, and a bad and a good example."""
    if ns.list or not ns.cause:
        for entry in catalogue.entries():
            print(f"{entry.code}  {entry.slug:<28} {entry.title}")
        return EXIT_OK if ns.list else EXIT_USAGE
    try:
        entry = catalogue.get(ns.cause)
    except KeyError:
        keys = [k for e in catalogue.entries() for k in (e.code, e.slug)]
        close = difflib.get_close_matches(ns.cause, keys, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else " (see 'tfretrace explain --list')"
        raise UsageError(f"unknown cause {ns.cause!r}{hint}") from None
    print(explanation(entry))
    return EXIT_OK


def explanation(entry: catalogue.Cause, width: int = 88) -> str:
    """The text ``tfretrace explain`` prints for one entry."""
    wrap = textwrap.TextWrapper(width=width, subsequent_indent="     ")
    lines = [f"{entry.code} {entry.slug}: {entry.title}", ""]
    if entry.kind != "runtime" and entry.cause:
        lines += [f"Kind: {entry.kind} rule; at run time this shows up as {entry.cause}.", ""]
    lines += [wrap.fill(f"Why: {entry.why}"), wrap.fill(f"Fix: {entry.fix}")]
    for heading, code in (("Bad", entry.bad), ("Good", entry.good)):
        if code:
            lines += ["", f"{heading}:", textwrap.indent(code, "    ")]
    return "\n".join(lines)
