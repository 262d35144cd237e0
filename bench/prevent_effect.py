"""Prevent and fix as one cure: over every example, traces as written, reduce_retracing, --prevent, fix, both.

For each script in examples/ and examples/wild/, in a fresh copy of examples/:
  1. as written: `tfretrace run --save profile.json` (the profile and the fix plan), once more for
     whether the output is deterministic;
  2. reduce_retracing: TensorFlow's own `reduce_retracing=True` forced on every tf.function;
  3. --prevent: `tfretrace run --prevent profile.json --no-learn`;
  4. fix --apply: the plan of profile.json applied in another copy, then run as written;
  5. both: that fixed copy recorded once more as a profile, then run with `--prevent` on it.
Every count is TensorFlow's own, `experimental_get_tracing_count()` summed over every tf.function
object the program made (bench/tf_counts.py runs the program, under `tfretrace run` where a run
needs it), so a warm-up trace counts like any other. The minimum is the traces the calls need
with no retrace (first, variable-creation and per-replica traces, from the recorded session).

"Output" compares each run's stdout with the first as-written run's, less the lines that mention
traces (the counts are meant to change): `same`, `announced` (it differs and the tool said so: a
prevented function's `changes`, a plan step's `changes`), `CHANGED` (it differs unannounced), or
`-` where the program is nondeterministic (its two as-written runs differ) and is not judged.

Usage: python bench/prevent_effect.py [SCRIPT ...]      (7 runs of 5-10 s per example)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tfretrace.records.session import Session, load

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
COUNTS = ROOT / "bench" / "tf_counts.py"
COLUMNS = ("written", "reduce", "prevent", "fixed", "both")


@dataclass
class Row:
    """One example: TensorFlow's counts per way of running it, and how each run's output compares."""

    script: str
    traces: dict[str, int] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    minimum: int = 0
    warmup_seconds: float = 0.0
    failed: str = ""


@dataclass(frozen=True)
class Ran:
    """One run: exit status, stdout, TensorFlow's total count, and the last line of stderr when it failed."""

    status: int
    stdout: str
    traces: int
    why: str


def run(folder: Path, script: str, *tfretrace: str, reduce: bool = False) -> Ran:
    """Run ``script`` counted by TensorFlow; under `tfretrace run OPTIONS` when ``tfretrace`` names options."""
    counts = folder / ".tf_counts.json"
    counts.unlink(missing_ok=True)
    program = [str(COUNTS), str(counts), script]
    command = [sys.executable, "-m", "tfretrace", "run", "--no-progress", *tfretrace, *program] if tfretrace \
        else [sys.executable, *program]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TFRETRACE_PREVENT", None)
    if reduce:
        env["TF_COUNTS_REDUCE_RETRACING"] = "1"
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, env=env)
    traces = sum(json.loads(counts.read_text(encoding="utf-8")).values()) if counts.exists() else -1
    last = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    return Ran(proc.returncode, proc.stdout, traces, "".join(last)[:80])


def program_output(stdout: str) -> str:
    """The program's output without lines about traces, which prevention is meant to change."""
    return "".join(line for line in stdout.splitlines(keepends=True) if "trace" not in line.lower())


def shape_retraces(session: Session) -> int:
    """Retraces whose cause is shape-changed (the kept events)."""
    return sum(1 for f in session.functions for e in f.events if e.is_retrace and e.cause == "shape-changed")


def plan_announces(session: Session) -> bool:
    """Whether a plan step the fix applies says it changes the results (its ``changes`` field)."""
    return any(step.get("changes") and step.get("edits") for f in session.functions for step in f.plan)


def prevention_announces(session: Session) -> bool:
    """Whether the prevention report names a change in the results (a function's ``changes``)."""
    return session.prevention is not None and any(f.changes for f in session.prevention.functions)


def judge(reference: str, stdout: str, announced: bool) -> str:
    """`same`, `announced` or `CHANGED` for one run's output against the as-written one."""
    if program_output(stdout) == reference:
        return "same"
    return "announced" if announced else "CHANGED"


def measure(script: Path) -> Row:
    """The seven runs of one example, in fresh copies of examples/."""
    row = Row(str(script.relative_to(EXAMPLES)))
    name = row.script
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "examples"
        shutil.copytree(EXAMPLES, folder)
        fixed = Path(tmp) / "fixed"
        shutil.copytree(EXAMPLES, fixed)
        written = run(folder, name, "--save", "profile.json")
        if written.status != 0 or not (folder / "profile.json").exists():
            row.failed = f"as written failed: {written.why}"
            return row
        profile = load(folder / "profile.json")
        row.minimum = sum(f.traces - f.retraces for f in profile.functions)
        reference = program_output(written.stdout)
        deterministic = program_output(run(folder, name).stdout) == reference
        shutil.copy(folder / "profile.json", fixed / "profile.json")
        reduce = run(folder, name, reduce=True)
        prevent = run(folder, name, "--prevent", "profile.json", "--no-learn", "--save", "prevented.json")
        prevented = load(folder / "prevented.json") if (folder / "prevented.json").exists() else None
        apply = subprocess.run([sys.executable, "-m", "tfretrace", "fix", "profile.json", "--apply"], cwd=fixed,
                               capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        fix = run(fixed, name, "--save", "fixed.json") if apply.returncode == 0 else Ran(1, "", -1, "fix failed")
        both = run(fixed, name, "--prevent", "fixed.json", "--no-learn", "--save", "both.json") \
            if fix.status == 0 else Ran(1, "", -1, "fix failed")
        both_session = load(fixed / "both.json") if (fixed / "both.json").exists() else None
    runs = {"written": written, "reduce": reduce, "prevent": prevent, "fixed": fix, "both": both}
    announced = {
        "written": False,
        "reduce": False,
        "prevent": prevented is not None and prevention_announces(prevented),
        "fixed": plan_announces(profile),
        "both": plan_announces(profile) or (both_session is not None and prevention_announces(both_session)),
    }
    for column, ran in runs.items():
        row.traces[column] = ran.traces if ran.status == 0 else -1
        if ran.status != 0:
            row.output[column] = "failed"
        elif not deterministic:
            row.output[column] = "-"
        else:
            row.output[column] = judge(reference, ran.stdout, announced[column])
    report = prevented.prevention if prevented is not None else None
    row.warmup_seconds = sum(f.warmup_seconds for f in report.functions) if report is not None else 0.0
    return row


def main(argv: list[str]) -> int:
    """Measure the named examples (default: all), one row each, then the totals."""
    scripts = [Path(a).resolve() for a in argv] or sorted([*EXAMPLES.glob("*.py"), *EXAMPLES.glob("wild/*.py")])
    rows = []
    print(f"{'example':30} {'written':>7} {'reduce':>6} {'prevent':>7} {'fixed':>5} {'both':>4} {'min':>4} "
          f"{'warm-up ms':>10}  output (reduce / prevent / fixed / both)")
    for script in scripts:
        row = measure(script)
        rows.append(row)
        if row.failed:
            print(f"{row.script:30} {row.failed}", flush=True)
            continue
        t = row.traces
        outputs = " / ".join(row.output[c] for c in COLUMNS[1:])
        print(f"{row.script:30} {t['written']:7} {t['reduce']:6} {t['prevent']:7} {t['fixed']:5} {t['both']:4} "
              f"{row.minimum:4} {row.warmup_seconds * 1000:10.1f}  {outputs}", flush=True)
    done = [r for r in rows if not r.failed]
    print()
    print(f"examples: {len(done)} measured, {len(rows) - len(done)} failed")
    totals = {c: sum(r.traces[c] for r in done if r.traces[c] >= 0) for c in COLUMNS}
    least = sum(r.minimum for r in done)
    print("traces (TensorFlow's count): " + ", ".join(f"{c} {totals[c]}" for c in COLUMNS) + f"; minimum {least}")
    unannounced = [(r.script, c) for r in done for c in COLUMNS[1:] if r.output.get(c) == "CHANGED"]
    failed = [(r.script, c) for r in done for c in COLUMNS[1:] if r.output.get(c) == "failed"]
    print(f"output changed without a word: {len(unannounced)}"
          + (f" ({', '.join(f'{s} {c}' for s, c in unannounced)})" if unannounced else ""))
    if failed:
        print(f"runs that failed: {', '.join(f'{s} {c}' for s, c in failed)}")
    # reduce_retracing is TensorFlow's, not tfretrace's: its changes are shown, not failed on.
    ours = [r for r in done for c in ("prevent", "fixed", "both") if r.output.get(c) in ("CHANGED", "failed")]
    return 0 if not ours and len(done) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
