"""What the command line writes: checked output files, the saved session, the terminal report."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tfretrace._util.io import atomic_write_text, is_source_file
from tfretrace._util.text import encodable, printable
from tfretrace.cli.invocation import fold_command, tfretrace_command
from tfretrace.render import FORMATS, renderer_for
from tfretrace.render._console import colored, console_for, is_tty

__all__ = ["colored", "console_for", "is_tty"]  # the CLI's names for the console helpers

if TYPE_CHECKING:
    from rich.console import Console

    from tfretrace.records.session import Session


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit status 2.

    ``hint`` adds "(see 'tfretrace CMD --help')"; messages that carry their own hint turn it off.
    """

    def __init__(self, message: str, *, hint: bool = True) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Output:
    """A file to write: as the user typed it (for messages) and as an absolute path.

    ``fmt`` is the format --format named (else the extension picks); ``shown == "-"`` is stdout.
    """

    shown: str
    path: Path
    fmt: str | None = None

    @property
    def stdout(self) -> bool:
        """Whether this output is ``-o -``: the report on standard output."""
        return self.shown == STDOUT


STDOUT = "-"


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """The report options of ``run`` and ``report``: -o, --format, -v, --min-traces, --fail-on-retrace."""
    parser.add_argument(
        "-o",
        "--output",
        action="append",
        default=[],
        metavar="FILE",
        help="write the report to FILE; .txt, .json, .html or .md picks the format unless --format "
        "names one (repeatable); '-' is stdout (report only: run's stdout is the program's)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default=None,
        help="text, json or markdown: the format of every -o file, and for report of stdout",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true",
        help="the text report lists every trace, the long fix plan and each cause's explanation",
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


def checked_outputs(texts: Sequence[str], fmt: str | None, *, stdout: bool, folder: Path | None = None,
                    reads: Sequence[str] = ()) -> list[Output]:
    """``-o`` values checked before any work; ``-`` is stdout where the command allows it.

    ``run`` does not: its stdout is the program's, and a JSON report among the program's own
    lines would be neither's. Without ``-o``, a --format other than text writes to stdout
    (``report``) or is refused (``run``: stdout and stderr are both the program's).
    """
    outputs: list[Output] = []
    for text in texts:
        if text == STDOUT:
            if not stdout:
                raise UsageError("run -o -: stdout is the program's; write the report to a file "
                                 "(-o report.json), or save the run and use tfretrace report run.json -o -")
            outputs.append(Output(STDOUT, Path(os.devnull), fmt))
            continue
        checked = checked_output(in_folder(text, folder), "-o", check_format=fmt is None, reads=reads)
        outputs.append(replace(checked, fmt=fmt))
    if not outputs and fmt not in (None, "text"):
        if not stdout:
            raise UsageError(f"run --format {fmt} needs -o FILE: stdout and stderr are the program's")
        outputs.append(Output(STDOUT, Path(os.devnull), fmt))
    return outputs


def in_folder(text: str, folder: Path | None) -> str:
    """A relative output path inside the project's output folder (created), else as given."""
    if folder is None or os.path.isabs(text):
        return text
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"output-dir {str(folder)!r}: {exc.strerror or exc}", hint=False) from None
    return os.path.relpath(folder / text)


def checked_output(text: str, option: str, *, check_format: bool = True, reads: Sequence[str] = ()) -> Output:
    """Check an output path before any work: known format, existing writable folder, not a folder.

    Every option that writes a file comes here: it never replaces Python source or a notebook
    (``--save-baseline train.py``), nor a file the command reads (the program, an input).
    """
    path = Path(os.path.abspath(text))
    if is_source_file(path):
        raise UsageError(f"{option} {text!r} is Python source or a notebook: the output would overwrite it")
    for name in reads:
        if path.resolve() == Path(name).resolve():
            raise UsageError(f"{option} {text!r} is {name!r}, which this command reads: the output would overwrite it")
    if check_format:
        renderer_for(text)
    if path.is_dir():
        raise UsageError(f"{option} {text!r} is a folder, not a file")
    if path.exists() and not path.is_file():  # /dev/stdout, a FIFO: never replaced by a file
        raise UsageError(f"{option} {text!r} is not a regular file")
    if not path.parent.is_dir():
        raise UsageError(f"{option} {text!r}: folder {str(path.parent)!r} does not exist")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {text!r}: folder {str(path.parent)!r} is not writable")
    return Output(text, path)


def checked_save(text: str, reads: Sequence[str] = ()) -> Output:
    """Check ``--save``: a ``.json`` name that is new, empty, or an earlier tfretrace session.

    Saving replaces the file, so anything else there (``--save helper.py``, a notebook, a
    config.json) is someone's work: refused before the program runs, the file untouched.
    """
    output = checked_output(text, "--save", check_format=False, reads=reads)
    if output.path.suffix.lower() != ".json":
        raise UsageError(f"--save {text!r}: the session is JSON; give a file name ending in .json")
    if output.path.is_file() and not replaceable(output.path, "session"):
        raise UsageError(f"--save {text!r} exists and is not a tfretrace session: it would be replaced")
    return output


def replaceable(path: Path, what: str) -> bool:
    """An empty file, or one that tfretrace saved as ``what`` (a session or a baseline, any schema)."""
    try:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            return True
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(data, dict):
        return False
    if what == "baseline":
        # Loaded here: compare (and the matching it brings) is not needed to run a program.
        from tfretrace.compare.baseline import BASELINE_MARK

        return BASELINE_MARK in data
    from tfretrace.records.session import TOOL  # the session model: loaded for a file to replace

    tool = data.get("tool")
    return isinstance(tool, dict) and tool.get("name") == TOOL and "functions" in data


def save_session(session: Session, output: Output | None) -> str | None:
    """Save to ``--save``; without it nothing is written (no temporary file left behind)."""
    if output is None:
        return None
    try:
        session.save(output.path)
        return output.shown
    except OSError as exc:
        print(f"tfretrace: could not save the session: {exc}", file=sys.stderr)
        return None


def emit(
    session: Session,
    ns: argparse.Namespace,
    console: Console,
    saved: str | None,
    outputs: Sequence[Output] = (),
    sources: list[str] | None = None,
    implicit: bool = False,
) -> bool:
    """Write each ``-o`` file, or the terminal report (at the console's width and colour) and the
    re-render command to the console's stream.

    ``implicit``: ``saved`` is the project's kept last session, not a file the user named.

    Returns False when a file could not be written (one line says why; an earlier file of
    that name is left as it was).
    """
    from tfretrace.render._model import hide_below
    from tfretrace.render.text import TextRenderer  # rich's layout: loaded when a report is drawn

    view = hide_below(session, ns.min_traces)
    verbose = bool(getattr(ns, "verbose", False))
    ok = True
    for output in outputs:
        renderer = renderer_for(output.fmt or ("text" if output.stdout else output.shown))
        if output.stdout:
            if renderer.name == "text":  # as the terminal report, at stdout's width and colour
                out = console_for(sys.stdout)
                renderer = TextRenderer(width=out.width, color=colored(out), verbose=verbose)
            sys.stdout.write(encodable(renderer.render(view)).rstrip("\n") + "\n")
            sys.stdout.flush()
            continue
        if renderer.name == "text" and verbose:
            renderer = TextRenderer(verbose=True)
        try:
            atomic_write_text(output.path, encodable(renderer.render(view)))
        except OSError as exc:
            print(f"tfretrace: error: could not write {output.shown!r}: {exc.strerror or exc}",
                  file=sys.stderr)
            ok = False
            continue
        print(f"tfretrace: wrote {printable(output.shown)}", file=sys.stderr)
    if outputs:
        if not any(output.stdout for output in outputs):
            # The files hold the report; the terminal still gets its one-line summary.
            summary = TextRenderer(width=console.width, color=colored(console)).summary(view)
            console.file.write(summary + "\n")
            console.file.flush()
        return ok
    stream = console.file
    files = sources if sources is not None else ([saved] if saved else [])
    # Under run --fix-plan the plans follow the report, once, with the commands that apply them.
    renderer = TextRenderer(width=console.width, color=colored(console),
                            plans=not getattr(ns, "fix_plan", False), saved=bool(files), verbose=verbose)
    stream.write(renderer.render(view))
    if session.prevention is not None:
        # A run warmed from a profile (tfretrace run --prevent): what the warm-ups prevented.
        from tfretrace.records.prevention import render as render_prevention

        stream.write("\n" + render_prevention(session.prevention))
    # A session the user saved (--save, or files given to `tfretrace report`) gets the command that
    # renders it again; the kept last session is what `tfretrace fix` reads unnamed, and the run's
    # grouped report ends with its footer (which names -v and -o report.html) and next commands.
    if files and not implicit:
        words = [*shlex.split(tfretrace_command()), "report", *files, "-o", "report.html"]
        command = fold_command("Re-render: ", [printable(shlex.quote(w)) for w in words], console.width)
        print(("\n" if verbose else "") + command, file=stream)
    elif not files and sources is None and not implicit:
        print("\nTo re-render this run later (HTML, JSON), run it with --save run.json", file=stream)
    stream.flush()
    return ok


def terminal_style(stream: TextIO, environ: Mapping[str, str]) -> tuple[int, bool]:
    """Width and colour for ``stream``, as its Console (:func:`console_for`) sees them."""
    console = console_for(stream, environ)
    return console.width, colored(console)
