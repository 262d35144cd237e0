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
batch, a cast changes the dtype, a body drawing random numbers draws others; a generalized graph,
`float-last-digits`, only printed numbers moved in their last digits) is "changed as <changes>
says", counted apart from the rest.

"Other data": a fix is fitted to one recorded run, so the original and each edited copy (`--apply`,
and `--apply --unsafe-fixes`) also run on data the record never saw: `--seed 1` and a `--size` of
three quarters of the example's default, plus one (every example takes both; an odd size leaves
another partial batch). The edited program must print what the original prints there, by the same
judgement. A crash, or a change no applied step announced, on either data counts the program as
broken in the summary. The shared judgements live in bench/fix_judge.py (bench/heldout.py uses them).

Usage: python bench/fix_effect.py [SCRIPT ...]      (about 20 s per example on 2 cores)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fix_judge import (
    RESTORED_BODY,
    Ran,
    announced,
    broken,
    call,
    counted,
    counterpart,
    judge,
    judge_other,
    minimum,
    other_args,
    program_output,
    recorded,
    same_model,
)

from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.plan import plan_steps, saved_prediction
from tfretrace.fix.planning.restored import RESTORED_SUFFIX
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session, load

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def by_hand(plan: Sequence[Mapping[str, object]]) -> bool:
    """Whether a step that removes traces is made by a person (``by``: ``hand``; no edits in older sessions)."""
    return any(
        (s.get("by", "tfretrace" if s.get("edits") else "hand") == "hand"
         and int(str(s["traces_after"])) < int(str(s["traces_before"])))
        or s.get("open") == "framework-code"  # advice for TensorFlow's code: a person's step, no count
        for s in plan
    )


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
    # The edited program against the original, both on other data (bench/fix_judge.py's judge_other).
    other: str = ""
    other_unsafe: str = ""


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
    other: str  # on other data, against the original there
    after: dict[str, list[FunctionReport]]
    counted: dict[str, int]


@dataclass(frozen=True)
class Original:
    """The unedited example: recorded twice on its own data, and run on other data."""

    plain: Ran
    again: Ran
    other: Ran
    other_args: list[str]

    @property
    def deterministic(self) -> bool:
        return program_output(self.plain.stdout) == program_output(self.again.stdout)


def apply_fix(folder: Path, unsafe: bool) -> subprocess.CompletedProcess[str]:
    """`tfretrace fix before.json --apply` in ``folder`` (``unsafe``: with --unsafe-fixes)."""
    flags = ["--apply", *(["--unsafe-fixes"] if unsafe else [])]
    return call([sys.executable, "-m", "tfretrace", "fix", "before.json", *flags], folder)


def apply_and_run(folder: Path, rel: str, before: Session, original: Original, unsafe: bool) -> Applied:
    """Apply the saved plan in ``folder`` (``unsafe``: --unsafe-fixes too), run the program, judge its output.

    It runs on its own data (under `tfretrace run`, then TensorFlow's counter) and on the other data.
    """
    fix = apply_fix(folder, unsafe)
    ran = recorded(folder, rel, "after.json")
    after = _by_name(load(folder / "after.json").functions) if ran.status == 0 else {}
    counts = counted(folder, rel).counts if ran.status == 0 else {}
    on_other = counted(folder, rel, original.other_args)
    applied = announced(before.functions, unsafe)
    output = judge(original.plain.stdout, original.again.stdout, ran.stdout, applied)
    other = judge_other(original.other, on_other, applied, original.deterministic)
    if fix.returncode != 0:
        output = other = f"fix refused (exit {fix.returncode}): {fix.stderr.strip()[:60]}"
    elif ran.status != 0:
        output = f"FAILED (exit {ran.status}): {ran.why}"
    return Applied(ran.status, output, other, after, counts)


def _key(f: FunctionReport) -> tuple[str, str, str]:
    # Several Keras models' predict functions share a name and a location, not a model.
    return f.name, f.location, f.display_name()


def _measured(f: FunctionReport, before: Session, done: Applied) -> tuple[int | None, bool]:
    """TensorFlow's count of one recorded function after the fix (else tfretrace's), and whether TF's."""
    # A def moved out of its function to module level loses the "outer.<locals>." prefix.
    short = f.name.rsplit(".", 1)[-1]
    same = same_model(f, done.after.get(f.name) or done.after.get(short, []))
    # By name (and model); by place only between rows of one name (an edit above them shifts lines).
    now = counterpart(f, done.after)
    peers = sorted(same_model(f, [g for g in before.functions if g.name == f.name]), key=_line)
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
        plain = recorded(folder, rel, "before.json")
        if plain.status != 0:
            return [Row(rel, "(program failed)", 0, None, None, 0, False, f"FAILED (exit {plain.status}): {plain.why}")]
        again = recorded(folder, rel, "again.json")
        args = other_args(script)
        original = Original(plain, again, counted(folder, rel, args), args)
        before: Session = load(folder / "before.json")
        reader = SourceReader(folder)
        # Keyed by name and place: two pipelines may map the same function (one row each).
        predicted = {_key(f): saved_prediction(f, reader) for f in before.functions}
        predicted_unsafe = {_key(f): saved_prediction(f, reader, unsafe=True) for f in before.functions}
        unsafe_done = None
        if _has_unsafe(before):
            # A second copy of the unedited examples, with the same session: --unsafe-fixes there.
            other = Path(tmp) / "unsafe" / "examples"
            shutil.copytree(EXAMPLES, other, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(folder / "before.json", other / "before.json")
            unsafe_done = apply_and_run(other, rel, before, original, unsafe=True)
        done = apply_and_run(folder, rel, before, original, unsafe=False)
        rows = []
        for f in before.functions:
            if f.retraces == 0:
                continue
            plan = list(f.plan)
            measured, by_tf = _measured(f, before, done)
            measured_unsafe = _measured(f, before, unsafe_done)[0] if unsafe_done is not None else measured
            rows.append(Row(
                rel, f.display_name(), f.traces, predicted.get(_key(f)), measured,
                minimum(plan, f.traces - f.retraces), by_hand(plan), done.output, by_tf,
                predicted_unsafe.get(_key(f)), measured_unsafe,
                unsafe_done.output if unsafe_done is not None else done.output,
                done.other, unsafe_done.other if unsafe_done is not None else done.other,
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
        f"{'hand':>4}  {'output':24} other data"
    )
    print(header)
    print("-" * len(header))
    rows: list[Row] = []
    for script in scripts:
        for r in measure(script):
            rows.append(r)
            unsafe = f"{r.predicted_unsafe!s}/{r.after_unsafe!s}"
            extra = "" if (r.output_unsafe, r.other_unsafe) == (r.output, r.other) else \
                f"; with --unsafe-fixes: {r.output_unsafe}, other data {r.other_unsafe}"
            print(
                f"{r.example:32} {r.function[:44]:44} {r.before:>6} {r.predicted!s:>5} {r.after!s:>5} {unsafe:>11} "
                f"{r.minimum:>4} {'yes' if r.hand else '':>4}  {r.output:24} {r.other}{extra}"
                + ("" if r.by_tf else "  (tfretrace count)"),
                flush=True,
            )
    summarize(rows)
    return 0


def _named(examples: set[str]) -> str:
    return f"{len(examples)}" + (f" ({', '.join(sorted(examples))})" if examples else "")


def broken_programs(rows: Sequence[Row], unsafe: bool = False, other_only: bool = False) -> set[str]:
    """The examples whose edited program broke: output changed unannounced, a crash, or a refused fix.

    On their own data or on the other data (``other_only``: on the other data alone); ``unsafe``:
    the copy edited with --unsafe-fixes too.
    """
    found = set()
    for r in rows:
        own, other = (r.output_unsafe, r.other_unsafe) if unsafe else (r.output, r.other)
        if (broken(other) and not broken(own)) if other_only else (broken(own) or broken(other)):
            found.add(r.example)
    return found


def summarize(rows: list[Row]) -> None:
    """The shares, for --apply (safe edits) and for --apply --unsafe-fixes.

    A program is broken where its output changed unannounced, it failed, or its fix was refused,
    on its own data or on the other data (bench/fix_judge.py's ``broken``).
    """
    measured = [r for r in rows if r.after is not None]
    reached = [r for r in measured if r.after is not None and r.after <= r.minimum]
    exact = sum(1 for r in measured if r.predicted == r.after)
    failed, on_other = broken_programs(rows), broken_programs(rows, other_only=True)
    by_design = {r.example for r in rows if r.output.startswith("changed as") or r.other.startswith("changed as")}
    measured_unsafe = [r for r in rows if r.after_unsafe is not None]
    reached_unsafe = [r for r in measured_unsafe if r.after_unsafe is not None and r.after_unsafe <= r.minimum]
    exact_unsafe = sum(1 for r in measured_unsafe if r.predicted_unsafe == r.after_unsafe)
    failed_unsafe = broken_programs(rows, unsafe=True)
    on_other_unsafe = broken_programs(rows, unsafe=True, other_only=True)
    print(f"\nfunctions that retraced: {len(rows)}; measured after the fix: {len(measured)} "
          f"({sum(r.by_tf for r in measured)} by TensorFlow's counter)")
    if measured:
        share = f"{len(reached)}/{len(measured)} = {len(reached) / len(measured):.0%}"
        print(f"reached the minimum with --apply alone (safe edits): {share}")
        short = [r for r in measured if r not in reached]
        print(f"  of the {len(short)} that did not: {sum(r.hand for r in short)} need a step applied by hand (advice)")
        print(f"prediction equal to the measurement: {exact}/{len(measured)} = {exact / len(measured):.0%}")
    if measured_unsafe:
        share = f"{len(reached_unsafe)}/{len(measured_unsafe)} = {len(reached_unsafe) / len(measured_unsafe):.0%}"
        print(f"reached the minimum with --apply --unsafe-fixes: {share}; prediction equal to the measurement: "
              f"{exact_unsafe}/{len(measured_unsafe)}")
        print(f"  programs whose output changed unannounced, that failed, or whose fix was refused with "
              f"--unsafe-fixes, on their own or other data: {_named(failed_unsafe)}; "
              f"on other data only: {_named(on_other_unsafe)}")
    print(f"programs whose output changed as an applied step says it will: {_named(by_design)}")
    print(f"programs whose output changed unannounced, that failed, or whose fix was refused, on their own or "
          f"other data: {_named(failed)}; on other data only: {_named(on_other)}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
