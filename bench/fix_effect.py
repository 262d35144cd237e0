"""Does `tfretrace fix --apply` work? Over every example: traces before, predicted, measured after.

For each script in examples/ and examples/wild/, in a fresh copy of examples/:
  1. `tfretrace run --save before.json SCRIPT`, twice, to learn whether the program's own output is
     deterministic at all;
  2. the saved plan's prediction for its mechanical edits (`saved_prediction`);
  3. `tfretrace fix before.json --apply`, then the edited program twice: under `tfretrace run` (its
     output, and its report's count for reference) and under `bench/tf_counts.py`, which counts
     every tf.function object's traces with TensorFlow's own `experimental_get_tracing_count()`
     and no tfretrace at all: that count is the one called "measured".
Prints one row per retracing function and, at the end, the share of functions whose measured count
reaches the minimum with `--apply` alone, and the share predicted exactly. A function whose
tf.function objects TensorFlow's counter cannot name apart (traces made by tf.data or pfor for the
user's code) is measured by tfretrace's report and marked so. The minimum is the fewest traces the plan
says the calls need: its lowest count, advice a person must apply by hand included, and a
statement's count where it says the remaining traces are expected (two list lengths of variables:
two traces). Where the plan cannot predict the function or leaves a cause with no checked fix, the
minimum is the traces TensorFlow needs with no retrace at all, so such a row only counts as reached
if the fix really removed every retrace.

"Output" compares the program's stdout before and after the fix, without the lines that report
trace counts (they contain "traces", and a working fix changes them); a program whose output
differs between two runs without any fix is "nondeterministic" and not judged. A change made by an
applied step whose `changes` field says it changes the results (drop_remainder skips the partial
batch, a cast changes the dtype, a body drawing random numbers draws others) is "changed as
<changes> says", counted apart from the rest.

Usage: python bench/fix_effect.py [SCRIPT ...]      (about 15 s per example on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfretrace.fix.plan import plan_steps, saved_prediction
from tfretrace.fix.restored import RESTORED_SUFFIX
from tfretrace.fix.source import SourceReader
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session, load

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
COUNTS = Path(__file__).resolve().with_name("tf_counts.py")


def run(folder: Path, script: str, save: str) -> tuple[int, str, str]:
    """Exit status, stdout, and the last line of stderr (why it failed, when it did)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tfretrace", "run", "--save", save, script],
        cwd=folder, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )
    last = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    return proc.returncode, proc.stdout, "".join(last)[:80]


# The qualname TensorFlow's counter gives every function tf.saved_model.load restores.
RESTORED_BODY = "recreate_function.<locals>.restored_function_body"


def minimum(plan: Sequence[Mapping[str, object]], expected: int) -> int:
    """The fewest traces the plan says the calls need; ``expected`` (no retrace) where it cannot say.

    A step with ``open`` leaves traces with no checked fix (no fix kind for the cause, the replay
    differs from TensorFlow, or the traced code is TensorFlow's): the plan does not know the fewest.
    """
    if not plan or any(s.get("open") for s in plan):
        return expected
    return min(int(str(s["traces_after"])) for s in plan)


def program_output(stdout: str) -> str:
    """The program's output without its trace-count lines, which a working fix is meant to change."""
    return "".join(line for line in stdout.splitlines(keepends=True) if "traces" not in line)


def judge(before: str, again: str, after: str, applied: set[str]) -> str:
    """Whether the fixed program prints what it printed before (two unfixed runs must agree first).

    ``applied``: the ``changes`` fields of the applied steps.
    """
    if program_output(before) != program_output(again):
        return "nondeterministic"
    if program_output(after) == program_output(before):
        return "same"
    said = sorted(applied)
    return f"changed as {', '.join(said)} says" if said else "CHANGED"


def by_hand(plan: Sequence[Mapping[str, object]]) -> bool:
    """Whether a step that removes traces is made by a person (``by``: ``hand``; no edits in older sessions)."""
    return any(
        (s.get("by", "tfretrace" if s.get("edits") else "hand") == "hand"
         and int(str(s["traces_after"])) < int(str(s["traces_before"])))
        or s.get("open") == "framework-code"  # advice for TensorFlow's code: a person's step, no count
        for s in plan
    )


def tf_measure(folder: Path, script: str) -> dict[str, int]:
    """TensorFlow's own trace count per function qualname for one run of ``script`` (no tfretrace)."""
    out = folder / "tf_counts.json"
    subprocess.run(
        [sys.executable, str(COUNTS), str(out), script],
        cwd=folder, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )
    try:
        found = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in found.items()}


@dataclass(frozen=True)
class Row:
    """One retracing function of one example: after `fix --apply`, and after `--apply --unsafe-fixes`."""

    example: str
    function: str
    before: int
    predicted: int | None
    after: int | None
    minimum: int
    hand: bool
    output: str
    by_tf: bool = True  # measured by TensorFlow's counter (False: by tfretrace's report)
    # With --unsafe-fixes (the same as above where the plan has no unsafe step).
    predicted_unsafe: int | None = None
    after_unsafe: int | None = None
    output_unsafe: str = ""


def _by_name(functions: Sequence[FunctionReport]) -> dict[str, list[FunctionReport]]:
    found: dict[str, list[FunctionReport]] = {}
    for f in functions:
        found.setdefault(f.name, []).append(f)
    return found


def _line(report: FunctionReport) -> int:
    return int(report.location.rpartition(":")[2] or 0)


@dataclass(frozen=True)
class Applied:
    """One copy of the examples after `tfretrace fix --apply` (with or without --unsafe-fixes), run again."""

    status: int
    output: str
    after: dict[str, list[FunctionReport]]
    counted: dict[str, int]


def apply_and_run(folder: Path, rel: str, before: Session, out_before: str, out_again: str, unsafe: bool) -> Applied:
    """Apply the saved plan in ``folder`` (``unsafe``: --unsafe-fixes too), run the program, judge its output."""
    fix = subprocess.run(
        [sys.executable, "-m", "tfretrace", "fix", "before.json", "--apply", *(["--unsafe-fixes"] if unsafe else [])],
        cwd=folder, capture_output=True, text=True, check=False,
    )
    status_after, out_after, why_after = run(folder, rel, "after.json")
    after = _by_name(load(folder / "after.json").functions) if status_after == 0 else {}
    counted = tf_measure(folder, rel) if status_after == 0 else {}
    top = 1 if unsafe else 0
    applied = {
        str(s.changes) for f in before.functions for s in plan_steps(f)
        if s.edits and s.changes and s.tier is not None and s.tier <= top
    }
    output = judge(out_before, out_again, out_after, applied)
    if fix.returncode != 0:
        output = f"fix refused (exit {fix.returncode}): {fix.stderr.strip()[:60]}"
    elif status_after != 0:
        output = f"FAILED (exit {status_after}): {why_after}"
    return Applied(status_after, output, after, counted)


def _measured(f: FunctionReport, before: Session, done: Applied) -> tuple[int | None, bool]:
    """TensorFlow's count of one recorded function after the fix (else tfretrace's), and whether TF's."""
    # A def moved out of its function to module level loses the "outer.<locals>." prefix.
    short = f.name.rsplit(".", 1)[-1]
    same = done.after.get(f.name) or done.after.get(short, [])
    # By name; by place only between rows of one name (an edit above them shifts lines).
    now = same[0] if len(same) == 1 else next((g for g in same if g.location == f.location), None)
    peers = sorted((g for g in before.functions if g.name == f.name), key=_line)
    if now is None and len(same) == len(peers) > 1:
        # An edit moved one of them (a pipeline built before its loop): match in line order.
        now = sorted(same, key=_line)[peers.index(f)]
    # TensorFlow's counter by qualname: one row per name (two rows of one name share it).
    tf_name = f.name if f.name in done.counted else short
    restored = [g for g in before.functions if g.name.endswith(RESTORED_SUFFIX)]
    if f.name.endswith(RESTORED_SUFFIX) and len(restored) == 1:
        tf_name = RESTORED_BODY  # every restored function traces TensorFlow's one body function
    by_tf = tf_name in done.counted and len(same) <= 1 and f.keras is None
    measured = done.counted[tf_name] if by_tf else (now.traces if now else None)
    if measured is None and done.status == 0:
        measured = 0  # the edited program ran and never traced it (a model called, not predict)
    return measured, by_tf


def _has_unsafe(before: Session) -> bool:
    return any(s.tier == 1 for f in before.functions for s in plan_steps(f))


def measure(script: Path) -> list[Row]:
    rel = script.relative_to(EXAMPLES).as_posix()
    with tempfile.TemporaryDirectory(prefix="fix-effect-") as tmp:
        folder = Path(tmp) / "examples"
        shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__"))
        status, out_before, why = run(folder, rel, "before.json")
        if status != 0:
            return [Row(rel, "(program failed)", 0, None, None, 0, False, f"FAILED (exit {status}): {why}")]
        _, out_again, _ = run(folder, rel, "again.json")
        before: Session = load(folder / "before.json")
        reader = SourceReader(folder)
        # Keyed by name and place: two pipelines may map the same function (one row each).
        predicted = {(f.name, f.location): saved_prediction(f, reader) for f in before.functions}
        predicted_unsafe = {(f.name, f.location): saved_prediction(f, reader, unsafe=True) for f in before.functions}
        unsafe_done = None
        if _has_unsafe(before):
            # A second copy of the unedited examples, with the same session: --unsafe-fixes there.
            other = Path(tmp) / "unsafe" / "examples"
            shutil.copytree(EXAMPLES, other, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(folder / "before.json", other / "before.json")
            unsafe_done = apply_and_run(other, rel, before, out_before, out_again, unsafe=True)
        done = apply_and_run(folder, rel, before, out_before, out_again, unsafe=False)
        rows = []
        for f in before.functions:
            if f.retraces == 0:
                continue
            plan = list(f.plan)
            measured, by_tf = _measured(f, before, done)
            measured_unsafe = _measured(f, before, unsafe_done)[0] if unsafe_done is not None else measured
            rows.append(Row(
                rel, f.display_name(), f.traces, predicted.get((f.name, f.location)), measured,
                minimum(plan, f.traces - f.retraces), by_hand(plan), done.output, by_tf,
                predicted_unsafe.get((f.name, f.location)), measured_unsafe,
                unsafe_done.output if unsafe_done is not None else done.output,
            ))
        return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/fix_effect.py",
        description="Record each example, apply `tfretrace fix --apply` in a copy, and compare the plan's "
        "prediction with the traces TensorFlow counts after the fix. Prints one row per retracing function "
        "and the shares: reached the minimum with --apply alone, prediction equal to the measurement.",
    )
    parser.add_argument("scripts", nargs="*", metavar="SCRIPT", help="examples to run (default: all of examples/)")
    args = parser.parse_args(argv)
    scripts = [Path(a).resolve() for a in args.scripts] or sorted(
        [*EXAMPLES.glob("*.py"), *EXAMPLES.glob("wild/*.py")]
    )
    header = (
        f"{'example':32} {'function':44} {'before':>6} {'pred':>5} {'after':>5} {'unsafe':>11} {'min':>4} "
        f"{'hand':>4}  output"
    )
    print(header)
    print("-" * len(header))
    rows: list[Row] = []
    for script in scripts:
        for r in measure(script):
            rows.append(r)
            unsafe = f"{r.predicted_unsafe!s}/{r.after_unsafe!s}"
            extra = "" if r.output_unsafe == r.output else f"; with --unsafe-fixes: {r.output_unsafe}"
            print(
                f"{r.example:32} {r.function[:44]:44} {r.before:>6} {r.predicted!s:>5} {r.after!s:>5} {unsafe:>11} "
                f"{r.minimum:>4} {'yes' if r.hand else '':>4}  {r.output}{extra}"
                + ("" if r.by_tf else "  (tfretrace count)"),
                flush=True,
            )
    summarize(rows)
    return 0


def summarize(rows: list[Row]) -> None:
    """The shares, for --apply (safe edits) and for --apply --unsafe-fixes."""
    counted = [r for r in rows if r.after is not None]
    reached = [r for r in counted if r.after is not None and r.after <= r.minimum]
    exact = sum(1 for r in counted if r.predicted == r.after)
    broken = {r.example for r in rows if r.output == "CHANGED" or r.output.startswith(("FAILED", "fix refused"))}
    by_design = {r.example for r in rows if r.output.startswith("changed as")}
    counted_unsafe = [r for r in rows if r.after_unsafe is not None]
    reached_unsafe = [r for r in counted_unsafe if r.after_unsafe is not None and r.after_unsafe <= r.minimum]
    exact_unsafe = sum(1 for r in counted_unsafe if r.predicted_unsafe == r.after_unsafe)
    broken_unsafe = {
        r.example for r in rows if r.output_unsafe == "CHANGED" or r.output_unsafe.startswith(("FAILED", "fix refused"))
    }
    print(f"\nfunctions that retraced: {len(rows)}; measured after the fix: {len(counted)} "
          f"({sum(r.by_tf for r in counted)} by TensorFlow's counter)")
    if counted:
        share = f"{len(reached)}/{len(counted)} = {len(reached) / len(counted):.0%}"
        print(f"reached the minimum with --apply alone (safe edits): {share}")
        short = [r for r in counted if r not in reached]
        print(f"  of the {len(short)} that did not: {sum(r.hand for r in short)} need a step applied by hand (advice)")
        print(f"prediction equal to the measurement: {exact}/{len(counted)} = {exact / len(counted):.0%}")
    if counted_unsafe:
        share = f"{len(reached_unsafe)}/{len(counted_unsafe)} = {len(reached_unsafe) / len(counted_unsafe):.0%}"
        print(f"reached the minimum with --apply --unsafe-fixes: {share}; prediction equal to the measurement: "
              f"{exact_unsafe}/{len(counted_unsafe)}")
        named = f" ({', '.join(sorted(broken_unsafe))})" if broken_unsafe else ""
        print(f"  programs whose output changed unannounced, that failed, or whose fix was refused with "
              f"--unsafe-fixes: {len(broken_unsafe)}{named}")
    print(f"programs whose output changed as an applied step says it will: {len(by_design)}"
          + (f" ({', '.join(sorted(by_design))})" if by_design else ""))
    print(f"programs whose output changed unannounced, that failed, or whose fix was refused: {len(broken)}"
          + (f" ({', '.join(sorted(broken))})" if broken else ""))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
