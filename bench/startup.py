"""Benchmark: what ``tfretrace`` costs before the program's first line runs (CPU seconds).

Prints, in CPU seconds of the child processes (user + system, ``getrusage(RUSAGE_CHILDREN)``):
  1. ``tfretrace --help`` beside ``python -c pass``;
  2. ``tfretrace run`` of a tiny script that imports nothing, as a ratio to ``python`` running it
     (and the difference), and the same for a script that only imports TensorFlow (what a real
     program pays for tfretrace beyond its own TensorFlow import).
Each comparison runs in alternating pairs (python, tfretrace, python, ...) and reports the
median, so a neighbour's load on a shared machine affects both sides alike. The tfretrace
measured is the one ``python -m tfretrace`` imports (set PYTHONPATH to compare checkouts).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

TINY = "total = sum(range(1000))\n"
WITH_TF = "import tensorflow as tf\n"


def cpu_seconds(argv: Sequence[str], cwd: str) -> float:
    """User + system CPU seconds of one child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def pairs(bare: Sequence[str], monitored: Sequence[str], cwd: str, rounds: int) -> tuple[float, float, float]:
    """Median bare seconds, median monitored seconds, median per-pair ratio (alternating runs)."""
    cpu_seconds(bare, cwd)  # warm the file cache for both before counting
    cpu_seconds(monitored, cwd)
    plain, watched, ratios = [], [], []
    for _ in range(rounds):
        a = cpu_seconds(bare, cwd)
        b = cpu_seconds(monitored, cwd)
        plain.append(a)
        watched.append(b)
        ratios.append(b / a if a > 0 else float("inf"))
    return statistics.median(plain), statistics.median(watched), statistics.median(ratios)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparisons and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating pairs per comparison (default 7)")
    parser.add_argument("--no-tf", action="store_true", help="skip the script that imports TensorFlow")
    args = parser.parse_args(argv)
    python = sys.executable
    found = subprocess.run([python, "-c", "import tfretrace; print(tfretrace.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(f"tfretrace from {found}; {args.rounds} alternating pairs, medians, CPU seconds")
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "tiny.py").write_text(TINY, encoding="utf-8")
        Path(folder, "with_tf.py").write_text(WITH_TF, encoding="utf-8")
        bare, helped, ratio = pairs([python, "-c", "pass"], [python, "-m", "tfretrace", "--help"], folder, args.rounds)
        print(f"tfretrace --help: {helped:.3f} s (python -c pass: {bare:.3f} s; +{helped - bare:.3f} s)")
        bare, run, ratio = pairs([python, "tiny.py"], [python, "-m", "tfretrace", "run", "tiny.py"], folder,
                                 args.rounds)
        print(f"tfretrace run tiny.py: {run:.3f} s vs python {bare:.3f} s: ratio {ratio:.1f}x (+{run - bare:.3f} s)")
        if not args.no_tf:
            bare, run, ratio = pairs([python, "with_tf.py"], [python, "-m", "tfretrace", "run", "with_tf.py"],
                                     folder, args.rounds)
            print(f"tfretrace run with_tf.py (imports TensorFlow): {run:.3f} s vs python {bare:.3f} s: "
                  f"ratio {ratio:.2f}x (+{run - bare:.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
