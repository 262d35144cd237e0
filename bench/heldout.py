"""Does `tfretrace fix --apply` work on real programs nobody here wrote? The held-out measurement.

Each program of bench/heldout/ (a reduced TensorFlow tutorial, keras-io example or GitHub project;
its docstring says which) takes ``--seed N`` and ``--size N``. For each, in a temporary folder:
  (a) the program runs as written under bench/tf_counts.py: TensorFlow's own trace count per
      function (``experimental_get_tracing_count()``), and its output;
  (b) `tfretrace run --save session.json` records it (its output, compared with (a)'s, tells whether
      the program is deterministic at all), then `tfretrace fix session.json --apply` edits a copy,
      which runs under the counter again; where `tfretrace fix --help` lists `--unsafe-fixes`, a
      second copy gets `--apply --unsafe-fixes` and is measured the same way;
  (c) the original and each edited copy run on other data (`--seed 1` and a size three quarters
      of the program's default, plus one), and their outputs are compared.
One row per function that retraced (in tfretrace's record or in TensorFlow's count): traces before
and after by TensorFlow's counter, the saved plan's prediction for `--apply` (the same reading as
bench/fix_effect.py), and the minimum as the plan gives it (bench/fix_judge.py's `minimum`).
A function TensorFlow's counter cannot name (a tf.data map function, a Keras predict function) is
counted by tfretrace's report of the edited copy, and marked so. "Output" is bench/fix_judge.py's
judgement: same, "changed as <changes> says" where an applied step's `changes` field announced it,
CHANGED where nothing did, or the failure. The summary: reached the minimum, predicted exactly,
programs broken (output changed unannounced, a crash, or a refused fix, on either data).

Usage: python bench/heldout.py [--programs a,b] [--json OUT.json]   (a few minutes per program)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fix_judge import (
    OTHER_SEED,
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
    other_size,
    program_output,
    recorded,
)

from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.plan import saved_prediction
from tfretrace.fix.planning.restored import RESTORED_SUFFIX
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import load

HELDOUT = Path(__file__).resolve().with_name("heldout")
SCRIPT = "prog.py"
# Qualnames TensorFlow's counter sums over many objects: Keras makes its trainer functions anew at each
# compile, tf.data wraps every pipeline's map function under one name.
FRAMEWORK = ("TensorFlowTrainer.", "StructuredFunctionWrapper.")


def unsafe_flag() -> bool:
    """Whether this tfretrace's `fix` has `--unsafe-fixes` (another change adds it)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tfretrace", "fix", "--help"], capture_output=True, text=True, check=False
    )
    return "--unsafe-fixes" in proc.stdout


@dataclass(frozen=True)
class Row:
    """One retracing function of one program, for one way of applying the fix."""

    program: str
    variant: str  # "apply" or "unsafe"
    function: str
    before: int | None
    predicted: int | None
    after: int | None
    minimum: int | None
    output: str
    other: str
    by_tf: bool = True
    in_report: bool = True


def tf_name(f: FunctionReport, counts: dict[str, int], sessions: Sequence[FunctionReport]) -> str | None:
    """The qualname TensorFlow's counter gives ``f``, None where it cannot name it apart."""
    if f.keras is not None:
        return None
    if f.name.endswith(RESTORED_SUFFIX):
        restored = [g for g in sessions if g.name.endswith(RESTORED_SUFFIX)]
        return RESTORED_BODY if len(restored) == 1 and RESTORED_BODY in counts else None
    if sum(1 for g in sessions if g.name == f.name) > 1:
        return None  # two functions of one name (two pipelines) share one count
    short = f.name.rsplit(".", 1)[-1]
    return f.name if f.name in counts else (short if short in counts else None)


def _variant(
    name: str, variant: str, folder: Path, flags: Sequence[str], size: int,
    base: tuple[Ran, Ran, Ran], session: Sequence[FunctionReport], log: dict[str, object],
) -> list[Row]:
    """Apply the fix in ``folder`` (a copy holding session.json) and measure it."""
    plain, again, other = base
    fix = call([sys.executable, "-m", "tfretrace", "fix", "session.json", *flags], folder)
    after = counted(folder, SCRIPT)
    after_other = counted(folder, SCRIPT, ["--seed", str(OTHER_SEED), "--size", str(size)])
    log[f"counts_after_{variant}"] = after.counts
    log[f"counts_other_after_{variant}"] = after_other.counts
    applied = announced(session, unsafe=variant == "unsafe")
    if fix.returncode != 0:
        output = other_out = f"fix refused (exit {fix.returncode}): {fix.stderr.strip()[:60]}"
    else:
        output = judge(plain.stdout, again.stdout, after.stdout, applied)
        if after.status != 0:
            output = f"FAILED (exit {after.status}): {after.why}"
        deterministic = program_output(plain.stdout) == program_output(again.stdout)
        other_out = judge_other(other, after_other, applied, deterministic)
    names = {id(f): tf_name(f, plain.counts, session) for f in session}
    report: dict[str, list[FunctionReport]] = {}
    unnamed = after.status == 0 and any(names[id(f)] is None for f in session if f.retraces)
    # Counts for what TensorFlow's counter cannot name; none (the row says "-") if this run fails.
    if unnamed and recorded(folder, SCRIPT, "after.json").status == 0 and (folder / "after.json").is_file():
        for g in load(folder / "after.json").functions:
            report.setdefault(g.name, []).append(g)
    reader = SourceReader(folder)
    rows = []
    for f in session:
        if f.retraces == 0:
            continue
        key = names[id(f)]
        if key is not None:
            # A def the fix moved to module level loses its "outer.<locals>." prefix.
            moved = after.counts.get(key, after.counts.get(key.rsplit(".", 1)[-1], 0))
            before, measured = plain.counts.get(key), moved if after.status == 0 else None
        else:
            now = counterpart(f, report)
            before = f.traces
            measured = (now.traces if now else 0) if report else None
        predicted = saved_prediction(f, reader) if variant == "apply" else None
        rows.append(Row(name, variant, f.display_name(), before, predicted, measured,
                        minimum(list(f.plan), f.traces - f.retraces), output, other_out, key is not None))
    named = {names[id(f)] for f in session}
    for key, n in sorted(plain.counts.items()):
        if key.startswith(FRAMEWORK):
            continue  # one count over many objects (each compile's, each pipeline's): not a retrace
        if n > 1 and key not in named:  # TensorFlow retraced it but tfretrace's record has no such function
            rows.append(Row(name, variant, key, n, None, after.counts.get(key) if after.status == 0 else None,
                            None, output, other_out, True, False))
    return rows


def measure(script: Path, unsafe: bool) -> tuple[list[Row], dict[str, object]]:
    """Rows of one program, and what its runs counted (for --json)."""
    name = script.stem
    size = other_size(script)
    with tempfile.TemporaryDirectory(prefix=f"heldout-{name}-") as tmp:
        folder = Path(tmp) / "original"
        folder.mkdir()
        shutil.copy2(script, folder / SCRIPT)
        plain = counted(folder, SCRIPT)
        if plain.status != 0:
            row = Row(name, "-", "(program failed)", None, None, None, None,
                      f"FAILED (exit {plain.status}): {plain.why}", "")
            return [row], {"counts_before": plain.counts}
        again = recorded(folder, SCRIPT, "session.json")
        other = counted(folder, SCRIPT, ["--seed", str(OTHER_SEED), "--size", str(size)])
        if again.status != 0:
            row = Row(name, "-", "(failed under tfretrace run)", None, None, None, None,
                      f"FAILED (exit {again.status}): {again.why}", "")
            return [row], {"counts_before": plain.counts}
        session = load(folder / "session.json").functions
        rows: list[Row] = []
        log: dict[str, object] = {"counts_before": plain.counts, "counts_other_before": other.counts,
                                  "other_size": size}
        variants = [("apply", ["--apply"]), *([("unsafe", ["--apply", "--unsafe-fixes"])] if unsafe else [])]
        for variant, flags in variants:
            copy = Path(tmp) / variant
            shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__", "tf_counts.json"))
            rows += _variant(name, variant, copy, flags, size, (plain, again, other), session, log)
        if not rows:
            rows.append(Row(name, "-", "(no retracing)", None, None, None, None,
                            judge(plain.stdout, again.stdout, plain.stdout, set()), ""))
        return rows, log


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/heldout.py",
        description="Measure `tfretrace fix --apply` on the held-out real programs of bench/heldout/: "
        "TensorFlow's trace counts before and after, the plan's prediction, and whether each program's "
        "output stayed the same, on its own data and on other data.",
    )
    parser.add_argument("--programs", help="comma-separated program names (file stems); default: all")
    parser.add_argument("--json", metavar="OUT.json", help="also write the rows and counts here")
    args = parser.parse_args(argv)
    scripts = sorted(HELDOUT.glob("*.py"))
    if args.programs:
        wanted = [p.strip().removesuffix(".py") for p in args.programs.split(",") if p.strip()]
        unknown = sorted(set(wanted) - {s.stem for s in scripts})
        if unknown:
            print(f"error: no such held-out program: {', '.join(unknown)}", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.stem in wanted]
    unsafe = unsafe_flag()
    header = (f"{'program':20} {'fix':6} {'function':40} {'before':>6} {'pred':>5} {'after':>5} {'min':>4}  "
              f"{'output':24} other data")
    print(header)
    print("-" * len(header))
    rows: list[Row] = []
    runs: dict[str, object] = {}
    for script in scripts:
        found, runs[script.stem] = measure(script, unsafe)
        for r in found:
            rows.append(r)
            mark = "" if r.by_tf else "  (tfretrace count)"
            mark += "" if r.in_report else "  (not in tfretrace's record)"
            print(f"{r.program:20} {r.variant:6} {r.function[:40]:40} {_cell(r.before):>6} {_cell(r.predicted):>5} "
                  f"{_cell(r.after):>5} {_cell(r.minimum):>4}  {r.output[:24]:24} {r.other}{mark}", flush=True)
    for variant in ["apply", *(["unsafe"] if unsafe else [])]:
        judged = [r for r in rows if r.variant == variant and r.after is not None and r.minimum is not None]
        reached = sum(1 for r in judged if r.after is not None and r.minimum is not None and r.after <= r.minimum)
        exact = sum(1 for r in judged if r.predicted == r.after)
        broke = sorted({r.program for r in rows
                        if r.variant in (variant, "-") and (broken(r.output) or broken(r.other))})
        how = "--apply" if variant == "apply" else "--apply --unsafe-fixes"
        print(f"\n{how}: reached minimum {reached}/{len(judged)}, "
              f"predicted==measured {exact if variant == 'apply' else '-'}/{len(judged)}, broke {len(broke)}"
              + (f" ({', '.join(broke)})" if broke else ""))
    if not unsafe:
        print("(`tfretrace fix` has no --unsafe-fixes here: measured --apply only)")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"rows": [asdict(r) for r in rows], "runs": runs, "unsafe_fixes": unsafe}, indent=1),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
