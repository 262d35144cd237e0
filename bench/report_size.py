"""Benchmark: how long and how wide the default terminal report is, for the demo and every example.

For each program (``examples/*.py``, the demo first) at ``COLUMNS=80`` it prints: the report's
lines (the program's output and TensorFlow's start-up lines aside: the report starts at its
``tfretrace: N functions`` line), lines per retrace (retraces plus XLA recompiles), the widest line,
the longest function block, the line of the first fix code, and whether each retracing function's
changed argument names and its fix code appear in its block. Then the targets of issue 40 and
whether each holds:

* the demo, as a plain run and under ``run --fix-plan``: at most 50 lines, 1.5 lines per
  retrace, 12 lines per function, the first fix code by line 10, every changed argument named
  and every fix code present;
* every other example with at least 3 retraces: at most 5 lines per retrace (below 3 the ratio
  measures the summary and footer every report has);
* every example: no line wider than 80 columns.

By default each example runs as a user types it, ``tfretrace run examples/NAME.py`` in a copy
(real TensorFlow, a few seconds each; see :func:`run_example`);
``--sessions DIR`` renders the ``NAME.json`` sessions saved there instead (no TensorFlow): the
snapshot tests' sessions (tests/data/report_sessions) are such a folder, and
tests/test_report_size.py asserts the targets on them through :func:`measure` and :func:`misses`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session, load
from tfretrace.records.xla_events import FIRST_COMPILE
from tfretrace.render import _model
from tfretrace.render._code import fit
from tfretrace.render._stories import shown_code

ROOT = Path(__file__).resolve().parents[1]
DEMO = "demo_train"
# The demo's second row: its report under ``run --fix-plan`` (TensorFlow asked, one note more).
FIX_PLAN = " --fix-plan"
COLUMNS = 80
# Issue 40's targets.
DEMO_LINES = 50
DEMO_PER_RETRACE = 1.5
FUNCTION_LINES = 12
FIRST_CODE_LINE = 10
OTHER_PER_RETRACE = 5.0
# A report's summary, function headline and footer take about 6 lines whatever the retraces: below
# this many retraces the ratio measures that fixed part, not how the report grows per retrace.
PER_RETRACE_FROM = 3
# Fix code sits this far in; its first line is looked for as fit() breaks it there.
CODE_INDENT = 6


@dataclass
class Measure:
    """One report's size and what it shows; ``missing`` lists what a function's block lacks."""

    name: str
    lines: int
    retraces: int
    widest: int
    longest_block: int
    first_code_line: int | None
    missing: list[str] = field(default_factory=list)

    @property
    def per_retrace(self) -> float:
        """Report lines per retrace (or XLA recompile); the line count itself when nothing retraced."""
        return self.lines / self.retraces if self.retraces else float(self.lines)


def report_part(stderr: str) -> str:
    """The report in a run's stderr: from its summary line on (TensorFlow's start-up lines aside)."""
    lines = stderr.split("\n")
    for number, line in enumerate(lines):
        if line.startswith("tfretrace: ") and " function" in line.split(",")[0]:
            return "\n".join(lines[number:]).rstrip("\n")
    return ""


def measure(name: str, report: str, session: Session, width: int = COLUMNS) -> Measure:
    """Size of ``report`` (the default text report of ``session`` at ``width``) and what it lacks."""
    lines = report.rstrip("\n").split("\n")
    retracing = _model.retracing_functions(session)
    blocks = _blocks(lines, retracing)
    missing: list[str] = []
    first_code: int | None = None
    for report_of in retracing:
        start, block = blocks.get(_model.label(report_of), (0, []))
        text = "\n".join(block)
        if not block:
            missing.append(f"{_model.label(report_of)}: no block")
            continue
        missing += [f"{_model.label(report_of)}: argument {p}" for p in changed(report_of) if p not in text]
        code = fix_code(report_of)
        if code is None:
            continue
        room = max(20, width - CODE_INDENT)
        first = fit(shown_code(code, report_of.location, room), room).split("\n")[0].strip()
        where = next((start + i for i, line in enumerate(block) if line.strip() == first), None)
        if where is None:
            missing.append(f"{_model.label(report_of)}: fix code")
        elif first_code is None or where < first_code:
            first_code = where
    retraces = session.total_retraces + sum(_model.xla_recompiles(f) for f in session.functions)
    return Measure(
        name=name,
        lines=len(lines),
        retraces=retraces,
        widest=max((len(line) for line in lines), default=0),
        longest_block=max((len(block) for _start, block in blocks.values()), default=0),
        first_code_line=first_code,
        missing=missing,
    )


def changed(report: FunctionReport) -> list[str]:
    """The argument paths whose change made a retrace or an XLA recompile, in order first seen."""
    paths = [c.path for e in report.events if e.is_retrace for c in e.changes]
    paths += [c.path for x in report.xla_events if x.cause != FIRST_COMPILE for c in x.changes]
    return list(dict.fromkeys(paths))


def fix_code(report: FunctionReport) -> str | None:
    """The code of the function's fix: its first trace step's with code, else its best XLA step's."""
    steps = [s for s in report.plan if isinstance(s, dict) and isinstance(s.get("code"), str)]
    traces = [s for s in steps if s.get("compiles_before") is None and s.get("kind") != "statement"]
    xla = sorted((s for s in steps if s.get("compiles_before") is not None),
                 key=lambda s: -float(s.get("seconds_saved") or 0))
    first = (traces or xla or [None])[0]
    return None if first is None else str(first["code"])


def _blocks(lines: list[str], retracing: list[FunctionReport]) -> dict[str, tuple[int, list[str]]]:
    """Each retracing function's block: (its first line's number, counted from 1; its lines).

    A block starts at the line that begins with the function's name and ends before the next
    blank line.
    """
    out: dict[str, tuple[int, list[str]]] = {}
    labels = {_model.label(f) for f in retracing}
    number = 0
    while number < len(lines):
        line = lines[number]
        label = next((lab for lab in labels if line == lab or line.startswith(lab + "  ")), None)
        if label is None or label in out or (number and lines[number - 1].strip()):
            number += 1
            continue
        end = number
        while end < len(lines) and lines[end].strip():
            end += 1
        out[label] = (number + 1, lines[number:end])
        number = end
    return out


def misses(found: Measure, width: int = COLUMNS) -> list[str]:
    """The targets ``found`` does not meet (empty when it meets them all)."""
    out = []
    if found.widest > width:
        out.append(f"widest line {found.widest} > {width}")
    if found.name in (DEMO, DEMO + FIX_PLAN):
        if found.lines > DEMO_LINES:
            out.append(f"{found.lines} lines > {DEMO_LINES}")
        if found.per_retrace > DEMO_PER_RETRACE:
            out.append(f"{found.per_retrace:.2f} lines per retrace > {DEMO_PER_RETRACE}")
        if found.longest_block > FUNCTION_LINES:
            out.append(f"a function block of {found.longest_block} lines > {FUNCTION_LINES}")
        if found.first_code_line is None or found.first_code_line > FIRST_CODE_LINE:
            out.append(f"first fix code at line {found.first_code_line} > {FIRST_CODE_LINE}")
        out += found.missing
    elif found.retraces >= PER_RETRACE_FROM and found.per_retrace > OTHER_PER_RETRACE:
        out.append(f"{found.per_retrace:.2f} lines per retrace > {OTHER_PER_RETRACE}")
    return out


def run_example(name: str, folder: Path, fix_plan: bool = False) -> tuple[str, Session]:
    """``tfretrace run examples/NAME.py`` as a user types it, at 80 columns: its report and session.

    It runs in a fresh copy of the example (``folder/NAME/examples/NAME.py``, so that the report
    names ``examples/NAME.py``), with the interpreter's folder first on PATH, as in an activated
    virtual environment, and with no option but ``--no-progress``: the session is the one the run
    keeps in ``.tfretrace/last-session.json``. ``fix_plan``: ``run --fix-plan`` instead (TensorFlow
    asked about the plans).
    """
    work = folder / (name + ("-fix-plan" if fix_plan else ""))
    (work / "examples").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / f"{name}.py", work / "examples" / f"{name}.py")
    bin_folder = os.path.dirname(sys.executable)
    env = dict(os.environ, COLUMNS=str(COLUMNS), PATH=bin_folder + os.pathsep + os.environ.get("PATH", ""))
    flags = ["--fix-plan"] if fix_plan else []
    done = subprocess.run(
        [sys.executable, "-m", "tfretrace", "run", "--no-progress", *flags, f"examples/{name}.py"],
        cwd=work, env=env, capture_output=True, text=True, check=False,
    )
    return report_part(done.stderr), load(work / ".tfretrace" / "last-session.json")


def rendered(path: Path, width: int = COLUMNS) -> tuple[str, Session]:
    """The default text report of a saved session at ``width``, and the session."""
    from tfretrace.render.text import TextRenderer

    session = load(path)
    return TextRenderer(width=width).render(session).rstrip("\n"), session


def examples() -> list[str]:
    """The demo first (a plain run, then ``run --fix-plan``), then every other example's name."""
    names = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
    return [DEMO, DEMO + FIX_PLAN, *(n for n in names if n != DEMO)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=Path, help="render NAME.json sessions saved here instead of running")
    parser.add_argument("--show", action="store_true", help="also print each report")
    args = parser.parse_args(argv)
    print(f"{'example':<24}{'lines':>6}{'retr':>6}{'l/retr':>8}{'widest':>8}{'block':>7}{'code@':>7}  misses")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in examples():
            if args.sessions is not None:
                path = args.sessions / f"{name}.json"
                if not path.is_file():
                    continue
                report, session = rendered(path)
            else:
                report, session = run_example(name.removesuffix(FIX_PLAN), Path(tmp), fix_plan=name.endswith(FIX_PLAN))
            found = measure(name, report, session)
            missed = misses(found)
            failed += bool(missed)
            code = "-" if found.first_code_line is None else str(found.first_code_line)
            print(f"{name:<24}{found.lines:>6}{found.retraces:>6}{found.per_retrace:>8.2f}{found.widest:>8}"
                  f"{found.longest_block:>7}{code:>7}  {'; '.join(missed) or 'ok'}")
            if args.show:
                print(report + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
