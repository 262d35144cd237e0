"""What bench/fix_effect.py and bench/heldout.py share: running a program, the minimum, judging output.

Both benches run a program as written and after `tfretrace fix --apply` (and `--unsafe-fixes`),
count its traces with TensorFlow's own counter (bench/tf_counts.py), and run the original and
every edited copy again on other data: ``--seed 1`` and a ``--size`` three quarters of the
program's default, plus one (another partial batch, other lengths). Every program they run takes
``--seed N --size N``. The judgements here are the benches' one definition of "same output",
"changed as an applied step says" and "broken".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfretrace.fix.applying.announced import FLOAT_DIGITS as FLOAT_DIGITS
from tfretrace.fix.applying.announced import applied_changes, excusing
from tfretrace.fix.applying.announced import last_digits_only as last_digits_only
from tfretrace.records.function_report import FunctionReport

COUNTS = Path(__file__).resolve().with_name("tf_counts.py")
# The qualname TensorFlow's counter gives every function tf.saved_model.load restores.
RESTORED_BODY = "recreate_function.<locals>.restored_function_body"
TIMEOUT = 600  # seconds one run of a program may take
OTHER_SEED = 1


@dataclass
class Ran:
    """One run of a program: exit status, stdout, why it failed, TensorFlow's counts (when counted)."""

    status: int
    stdout: str
    why: str
    counts: dict[str, int]


def call(cmd: Sequence[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in ``folder`` with no input; a run past TIMEOUT is exit status 124."""
    try:
        return subprocess.run(
            list(cmd), cwd=folder, capture_output=True, text=True, check=False,
            stdin=subprocess.DEVNULL, timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return subprocess.CompletedProcess(list(cmd), 124, out, f"timed out after {TIMEOUT} s")


def why(proc: subprocess.CompletedProcess[str]) -> str:
    """The last line of stderr of a failed run (what it died of), else nothing."""
    return "".join(proc.stderr.strip().splitlines()[-1:])[:80] if proc.returncode else ""


def counted(folder: Path, script: str, args: Sequence[str] = ()) -> Ran:
    """``script`` run in ``folder`` under TensorFlow's counter (bench/tf_counts.py), with no tfretrace."""
    out = folder / "tf_counts.json"
    out.unlink(missing_ok=True)
    proc = call([sys.executable, str(COUNTS), str(out), script, *args], folder)
    try:
        counts = {str(k): int(v) for k, v in json.loads(out.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError):
        counts = {}
    return Ran(proc.returncode, proc.stdout, why(proc), counts)


def other_size(script: Path) -> int:
    """Three quarters of the program's default --size, plus one (another partial batch, other lengths).

    Where that is the default itself (a default of 4 or less), one more than the default.
    """
    found = re.search(r'"--size",\s*type=int,\s*default=(\d+)', script.read_text(encoding="utf-8"))
    if found is None:
        raise SystemExit(f"{script.name}: no `--size` argument with an int default")
    default = int(found.group(1))
    other = default * 3 // 4 + 1
    return other if other != default else default + 1


def other_args(script: Path) -> list[str]:
    """The command-line arguments of the other data for ``script``."""
    return ["--seed", str(OTHER_SEED), "--size", str(other_size(script))]


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


def announced(functions: Iterable[FunctionReport], unsafe: bool) -> set[str]:
    """The ``changes`` fields of the steps `fix --apply` writes (``unsafe``: with --unsafe-fixes too)."""
    return applied_changes(functions, unsafe=unsafe)


def judge(before: str, again: str, after: str, applied: set[str]) -> str:
    """Whether the fixed program prints what it printed before (two unfixed runs must agree first).

    ``applied``: the ``changes`` fields of the applied steps. A change any of them announces is
    "changed as <changes> says"; ``float-last-digits`` announces only numbers moved in their last
    digits (``last_digits_only``): a larger change with nothing else said is CHANGED.
    """
    if program_output(before) != program_output(again):
        return "nondeterministic"
    if program_output(after) == program_output(before):
        return "same"
    said = sorted(applied)
    if said and excusing(program_output(before), program_output(after), said):
        return f"changed as {', '.join(said)} says"
    return "CHANGED"


def judge_other(orig: Ran, edited: Ran, applied: set[str], deterministic: bool) -> str:
    """The edited program against the original, both run on the other data.

    ``deterministic``: whether two runs of the original on its own data printed the same.
    """
    if orig.status != 0:
        return f"original failed (exit {orig.status})"
    if edited.status != 0:
        return f"FAILED (exit {edited.status}): {edited.why}"
    if not deterministic:
        return "nondeterministic"
    return judge(orig.stdout, orig.stdout, edited.stdout, applied)


def broken(judgement: str) -> bool:
    """Whether a judgement counts as a failure: output changed unannounced, a crash, or a refused fix."""
    return judgement == "CHANGED" or judgement.startswith(("FAILED", "fix refused"))


def recorded(folder: Path, script: str, save: str) -> Ran:
    """``script`` run in ``folder`` under `tfretrace run --save SAVE` (no counts: its session has them)."""
    proc = call([sys.executable, "-m", "tfretrace", "run", "--save", save, script], folder)
    return Ran(proc.returncode, proc.stdout, why(proc), {})


def same_model(f: FunctionReport, candidates: Sequence[FunctionReport]) -> list[FunctionReport]:
    """Those of ``candidates`` (one name) that can be ``f``: for a Keras function, only its model's.

    The predict functions of several Keras models share one name and one location (Keras's trainer):
    only the model's name, in the display name, tells them apart.
    """
    if f.keras is None:
        return list(candidates)
    return [g for g in candidates if g.display_name() == f.display_name()]


def counterpart(f: FunctionReport, report: Mapping[str, Sequence[FunctionReport]]) -> FunctionReport | None:
    """``f``'s function in an edited run's report: same name (and model), then same location, or a sole one."""
    same = same_model(f, report.get(f.name) or report.get(f.name.rsplit(".", 1)[-1], []))
    return next((g for g in same if g.location == f.location), same[0] if len(same) == 1 else None)
