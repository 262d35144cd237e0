"""What does `tfretrace run --prevent` prevent? Over every example: traces without, with, and the minimum.

For each script in examples/ and examples/wild/, in a fresh copy of examples/:
  1. `tfretrace run --save profile.json SCRIPT` (the profile, and the traces without prevention);
  2. `tfretrace run --save again.json SCRIPT` once more, to learn whether the output is deterministic;
  3. `tfretrace run --prevent profile.json --save prevented.json SCRIPT`.
Trace counts are the monitor's, taken under TensorFlow's own trace function (the hook on
`_create_concrete_function`), so a warm-up trace counts like any other. The minimum is the traces
the calls need with no retrace at all (first traces, variable-creation and per-replica traces).
"Shape retraces" are the retraces whose cause is shape-changed: the only ones a warm-up can
prevent; the others need an edit (`tfretrace fix`). The warm-up cost is the seconds TensorFlow
spent in the warm-up traces, paid at each warmed function's first call.

"Output" compares the program's stdout with and without prevention, less the lines that mention
traces (prevention is meant to change them); a program whose two unprevented runs differ is
"nondeterministic" and not judged.

Usage: python bench/prevent_effect.py [SCRIPT ...]      (about 3 runs of 5-10 s per example)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tfretrace.records.session import Session, load

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Row:
    """One example: traces without, with and at least, shape retraces, warm-up cost, output."""

    script: str
    without: int
    with_prevention: int
    minimum: int
    shape_without: int
    shape_with: int
    warmup_seconds: float
    trace_seconds_without: float
    trace_seconds_with: float
    output: str
    failed: str = ""


def run(folder: Path, script: str, *options: str) -> tuple[int, str, str]:
    """Exit status, stdout, and the last line of stderr when it failed."""
    proc = subprocess.run(
        [sys.executable, "-m", "tfretrace", "run", "--no-progress", *options, script],
        cwd=folder, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )
    last = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    return proc.returncode, proc.stdout, "".join(last)[:80]


def program_output(stdout: str) -> str:
    """The program's output without lines about traces, which prevention is meant to change."""
    return "".join(line for line in stdout.splitlines(keepends=True) if "trace" not in line.lower())


def shape_retraces(session: Session) -> int:
    """Retraces whose cause is shape-changed (the kept events)."""
    return sum(1 for f in session.functions for e in f.events if e.is_retrace and e.cause == "shape-changed")


def measure(script: Path) -> Row:
    """The three runs of one example, in a fresh copy of examples/."""
    name = str(script.relative_to(EXAMPLES))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "examples"
        shutil.copytree(EXAMPLES, folder)
        status, before, why = run(folder, name, "--save", "profile.json")
        if status != 0 or not (folder / "profile.json").exists():
            return Row(name, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, "-", f"profile run failed: {why}")
        _, again, _ = run(folder, name, "--save", "again.json")
        status, after, why = run(folder, name, "--prevent", "profile.json", "--save", "prevented.json")
        if status != 0:
            return Row(name, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, "-", f"prevented run failed: {why}")
        profile, prevented = load(folder / "profile.json"), load(folder / "prevented.json")
    if program_output(before) != program_output(again):
        output = "nondeterministic"
    else:
        output = "unchanged" if program_output(before) == program_output(after) else "CHANGED"
    report = prevented.prevention
    return Row(
        script=name,
        without=profile.total_traces,
        with_prevention=prevented.total_traces,
        minimum=sum(f.traces - f.retraces for f in profile.functions),
        shape_without=shape_retraces(profile),
        shape_with=shape_retraces(prevented),
        warmup_seconds=sum(f.warmup_seconds for f in report.functions) if report is not None else 0.0,
        trace_seconds_without=sum(f.trace_seconds for f in profile.functions),
        trace_seconds_with=sum(f.trace_seconds for f in prevented.functions),
        output=output,
    )


def main(argv: list[str]) -> int:
    """Measure the named examples (default: all) and print one row each, then the totals."""
    scripts = [Path(a).resolve() for a in argv] or sorted([*EXAMPLES.glob("*.py"), *EXAMPLES.glob("wild/*.py")])
    rows = []
    print(f"{'example':34} {'without':>7} {'with':>5} {'min':>4} {'shape w/o':>9} {'shape w/':>8} "
          f"{'warm-up ms':>10} {'trace s w/o':>11} {'trace s w/':>10}  output")
    for script in scripts:
        row = measure(script)
        rows.append(row)
        if row.failed:
            print(f"{row.script:34} {row.failed}")
            continue
        print(f"{row.script:34} {row.without:7} {row.with_prevention:5} {row.minimum:4} {row.shape_without:9} "
              f"{row.shape_with:8} {row.warmup_seconds * 1000:10.1f} {row.trace_seconds_without:11.3f} "
              f"{row.trace_seconds_with:10.3f}  {row.output}", flush=True)
    done = [r for r in rows if not r.failed]
    without = sum(r.without for r in done)
    with_prevention = sum(r.with_prevention for r in done)
    least = sum(r.minimum for r in done)
    shape = sum(r.shape_without for r in done)
    shape_left = sum(r.shape_with for r in done)
    judged = [r for r in done if r.output != "nondeterministic"]
    unchanged = sum(1 for r in judged if r.output == "unchanged")
    print()
    print(f"examples: {len(done)} measured, {len(rows) - len(done)} failed")
    print(f"traces: {without} without -> {with_prevention} with prevention (minimum {least}); "
          f"{with_prevention / without if without else 0:.2f} of the traces remain")
    removable = without - least
    print(f"retraces removed: {without - with_prevention} of {removable} "
          f"({(without - with_prevention) / removable if removable else 0:.0%})")
    print(f"shape-driven retraces prevented: {shape - shape_left} of {shape} "
          f"({(shape - shape_left) / shape if shape else 0:.0%})")
    warm = sum(r.warmup_seconds for r in done)
    saved = sum(r.trace_seconds_without - r.trace_seconds_with for r in done)
    print(f"first-call warm-up cost: {warm * 1000:.1f} ms in all; tracing time {saved * 1000:+.1f} ms "
          f"saved overall ({sum(r.trace_seconds_without for r in done):.3f} s -> "
          f"{sum(r.trace_seconds_with for r in done):.3f} s, warm-ups included)")
    print(f"output unchanged: {unchanged} of {len(judged)} deterministic programs "
          f"({len(done) - len(judged)} nondeterministic, not judged)")
    return 0 if unchanged == len(judged) and len(done) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
