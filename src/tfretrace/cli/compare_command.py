"""`tfretrace compare BASE HEAD...` and the baseline gate of `tfretrace run` (--baseline, --save-baseline)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from tfretrace._util.text import printable
from tfretrace.cli.output import Output, UsageError, checked_output, replaceable, terminal_style

if TYPE_CHECKING:
    from tfretrace.compare.comparison import Comparison, Run
    from tfretrace.records.session import Session

# render.comparison.FORMATS (tests/test_report_formats.py checks they agree), written out here:
# the comparison and its renderers load only when a comparison is made, not for every parser.
FORMATS = ("text", "json", "markdown", "github")

# Exit statuses: the same as --fail-on-retrace and bad input elsewhere in the CLI.
EXIT_OK = 0
EXIT_WORSE = 1


def _tolerance(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number of retraces (0 or more), got {text!r}")
    return int(text)


def configure(parser: argparse.ArgumentParser) -> None:
    """The ``compare`` subcommand's usage, description and options (its one-line help is app.SUMMARIES')."""
    parser.usage = "tfretrace compare BASE.json HEAD.json [HEAD.json ...] [--format FORMAT] [--tolerance N]"
    parser.description = (
        "Per function, matched across the runs even when it moved: traces, retraces by cause, "
        "seconds and XLA compiles, base -> head, the costliest change first, with why each function "
        "that got worse retraces more. Each HEAD is compared with BASE. Exit 1 when a function got "
        "worse beyond --tolerance, 0 otherwise, 2 for bad input."
    )
    parser.add_argument("base", metavar="BASE.json", help="a saved session or a baseline file")
    parser.add_argument("heads", nargs="+", metavar="HEAD.json", help="saved sessions to compare with BASE")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (terminal), json, markdown (for a pull request) or github (annotations)")
    add_tolerance(parser)


def add_tolerance(parser: argparse.ArgumentParser) -> None:
    """``--tolerance N``: extra retraces (or XLA compiles) a function may gain before it counts as worse."""
    parser.add_argument(
        "--tolerance", type=_tolerance, default=0, metavar="N",
        help="extra retraces (or XLA compiles) per function allowed before it counts as worse (default 0)",
    )


def command_compare(ns: argparse.Namespace, out: TextIO) -> int:
    """Run ``tfretrace compare``; bad files raise SessionFormatError (one line, exit 2)."""
    from tfretrace.compare.baseline import load_run
    from tfretrace.compare.comparison import compare
    from tfretrace.render.comparison import render_comparisons

    base = load_run(ns.base)
    comparisons = [compare(base, load_run(path), ns.tolerance) for path in ns.heads]
    width, color = terminal_style(out, os.environ) if ns.format == "text" else (100, False)
    out.write(render_comparisons(comparisons, ns.format, width=width, color=color))
    out.flush()
    return EXIT_WORSE if any(c.worse for c in comparisons) else EXIT_OK


def add_run_options(run: argparse.ArgumentParser) -> None:
    """``run``'s baseline options."""
    run.add_argument("--save-baseline", metavar="FILE.json",
                     help="write the run's per-function trace counts to FILE (small, sorted JSON for the repository)")
    run.add_argument("--baseline", metavar="FILE.json",
                     help="compare the run with this baseline (or session) like 'tfretrace compare'; "
                     "exit 1 when a function got worse")
    add_tolerance(run)


@dataclass(frozen=True)
class RunGate:
    """The baseline work of one ``tfretrace run``: checked before the program, done after it."""

    base: Run | None
    save: Output | None

    @classmethod
    def from_args(cls, ns: argparse.Namespace, program: Sequence[str] = ()) -> RunGate:
        """Read the baseline and check the output before spending minutes on the program.

        The baseline replaces its file: only a new, empty or earlier baseline file, never the
        program or any Python source (``--save-baseline train.py``).
        """
        save = None if ns.save_baseline is None else checked_output(ns.save_baseline, "--save-baseline",
                                                                    check_format=False, reads=program)
        if save is not None and save.path.is_file() and not replaceable(save.path, "baseline"):
            raise UsageError(f"--save-baseline {ns.save_baseline!r} exists and is not a tfretrace baseline: "
                             "it would be replaced")
        if ns.baseline is not None and not os.path.exists(ns.baseline):
            raise UsageError(f"--baseline {ns.baseline!r}: no such file (write one with --save-baseline)", hint=False)
        if ns.baseline is None:
            return cls(None, save)
        from tfretrace.compare.baseline import load_run

        return cls(load_run(ns.baseline), save)

    def finish(self, session: Session, status: int, tolerance: int, err: TextIO) -> int:
        """Compare and save; the program's own failure status always wins over EXIT_WORSE."""
        worse = False
        if self.base is not None:
            from tfretrace.compare.comparison import compare, run_of
            from tfretrace.render.comparison import render_comparisons

            comparison: Comparison = compare(self.base, run_of(session, "this run"), tolerance)
            width, color = terminal_style(err, os.environ)
            err.write("\n" + render_comparisons([comparison], "text", width=width, color=color))
            worse = bool(comparison.worse)
        if self.save is not None and status != EXIT_OK:
            # A failed run's counts would become the standard every later run is held to.
            print("tfretrace: baseline not saved: the program failed", file=err)
        elif self.save is not None:
            from tfretrace.compare.baseline import baseline_of

            try:
                baseline_of(session).save(self.save.path)
                print(f"tfretrace: baseline saved to {printable(self.save.shown)}", file=err)
            except OSError as exc:
                print(f"tfretrace: could not save the baseline: {exc}", file=sys.stderr)
                return status or 2
        if status == EXIT_OK and worse:
            return EXIT_WORSE
        return status
