"""Runs that end together widen one profile file: every learnt signature is kept (real processes, real TF)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.tf

WORKERS = 8
ROUNDS = 20

# Eight functions of distinct code, each traced once: eight profile entries to learn.
PROGRAM = "import tensorflow as tf\n\n" + "".join(
    f"@tf.function\ndef f{i}(x):\n    return x * {i + 1}.0\n\n\nf{i}(tf.ones([{i + 2}]))\n\n" for i in range(WORKERS)
)


def _tfretrace(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    env.pop("TFRETRACE_PREVENT", None)
    return subprocess.run([sys.executable, "-m", "tfretrace", "run", "--no-progress", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _learner(index: int, session_path: str, profile_path: str, barrier: Any, results: Any) -> None:
    """One run's end, ROUNDS times: read the profile as a run starts, then widen it with one function.

    The same calls ``tfretrace run --prevent`` makes (runtime.prevent.runtime.Prevention.finish).
    """
    from tfretrace.records.session import load
    from tfretrace.runtime.prevent import load_profile
    from tfretrace.runtime.prevent.learn import learn

    full = load(session_path)
    mine = replace(full, functions=tuple(f for f in full.functions if f.name == f"f{index}"))
    for _ in range(ROUNDS):
        barrier.wait()  # the file of the round before is gone
        profile = load_profile(profile_path, missing_ok=True)
        barrier.wait()  # everyone read it: now all end together
        _, learned = learn(profile, mine)
        results.put((index, learned.added, learned.written is not None, learned.note))
        barrier.wait()


def test_eight_processes_widening_one_profile_at_once_lose_nothing_twenty_times(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text(PROGRAM)
    done = _tfretrace("--save", "s.json", "p.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    profile = tmp_path / "profile.json"
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that may hold TensorFlow's threads
    barrier, results = ctx.Barrier(WORKERS + 1, timeout=300), ctx.Queue()
    workers = [ctx.Process(target=_learner, args=(i, str(tmp_path / "s.json"), str(profile), barrier, results))
               for i in range(WORKERS)]
    for w in workers:
        w.start()
    finished = False
    try:
        for round_ in range(ROUNDS):
            profile.unlink(missing_ok=True)
            barrier.wait()
            barrier.wait()
            barrier.wait()
            said = sorted(results.get(timeout=60) for _ in range(WORKERS))
            # Each run says it widened the file by its one signature, and the file holds all of them.
            assert said == [(i, 1, True, None) for i in range(WORKERS)], round_
            data = json.loads(profile.read_text())
            names = sorted(entry["name"] for entry in data["functions"])
            assert names == [f"f{i}" for i in range(WORKERS)], (round_, names)
            assert data["runs"] == WORKERS, round_
        finished = True
    finally:
        # A failed round must not leave the workers waiting for it; after the last round, aborting
        # could break a worker still waking from its last wait (a BrokenBarrierError, exit 1).
        if not finished:
            barrier.abort()
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.kill()
    assert [w.exitcode for w in workers] == [0] * WORKERS
