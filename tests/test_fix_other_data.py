"""``fix --verify --also-run``: the edited program checked on data the recorded run never saw."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

# Padded batches: in the recorded run (seed 0) every batch is padded to 12, on other seeds to less.
PROGRAM = """\
import sys

import numpy as np
import tensorflow as tf

seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
sizes = (5, 2, 9) if "--sizes" in sys.argv else (4, 8, 16, 3)
rng = np.random.default_rng(seed)


@tf.function
def step(x):
    return tf.reduce_sum(tf.cast(x, tf.float32), axis=1)


for n in sizes:
    length = 12 if seed == 0 else int(rng.integers(5, 12))
    x = rng.integers(0, 9, size=(n, length))
    print(float(tf.reduce_sum(step(tf.constant(x)))))
"""


def _tfretrace(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tfretrace", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def _verdicts(stdout: str) -> dict[str, str]:
    rows = [line.removeprefix("Other data, ").split(": ") for line in stdout.splitlines()
            if line.startswith("Other data, ")]
    return {row[0]: row[1] for row in rows}


def test_also_run_reports_each_other_data_run_and_fails_on_a_crash(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM)
    recorded = _tfretrace("run", "--save", "s.json", "train.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    source = (tmp_path / "train.py").read_bytes()
    done = _tfretrace("fix", "s.json", "--also-run", "python train.py --sizes", "--also-run",
                      f"{sys.executable} train.py --seed 1", "--verify", "--", "python", "train.py", cwd=tmp_path)
    verdicts = _verdicts(done.stdout)
    if "input_signature" not in done.stdout:
        pytest.fail("the plan has no signature to check on other data:\n" + done.stdout[-2000:])
    # Other batch sizes of the same padded length: the edited program prints what the original does.
    assert verdicts["python train.py --sizes"] == "same", done.stdout[-2000:]
    if "shape=[None, 12]" in done.stdout:
        # A length pinned because it was constant in the recorded run: another seed's shorter
        # batches crash the edited program, and the verification fails instead of passing.
        assert verdicts[f"{sys.executable} train.py --seed 1"] == "crashed"
        assert done.returncode == 1
    else:
        # The length left open: the edited program runs on every seed.
        assert verdicts[f"{sys.executable} train.py --seed 1"] == "same"
        assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "train.py").read_bytes() == source  # --verify and --also-run edit copies only


def test_also_run_without_verify_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text("{}")
    done = _tfretrace("fix", "s.json", "--also-run", "python train.py", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


# The edit makes one graph where the program built one per length, and the program prints
# TensorFlow's count: the output changes in an integer, which float-last-digits does not excuse.
COUNTING = """\
import sys

import tensorflow as tf

sizes = (5, 7, 9) if "--other" in sys.argv else (2, 3, 4, 6)


@tf.function
def step(x):
    return tf.reduce_sum(x * 3.0)


for n in sizes:
    print(float(step(tf.ones([n]))))
print("graphs built", step.experimental_get_tracing_count())
"""


def test_also_run_fails_a_change_that_float_last_digits_does_not_explain(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(COUNTING)
    recorded = _tfretrace("run", "--save", "s.json", "train.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    done = _tfretrace("fix", "s.json", "--also-run", "python train.py --other", "--verify", "--",
                      "python", "train.py", cwd=tmp_path)
    assert "float-last-digits" in (tmp_path / "s.json").read_text()  # the applied step announces it
    assert _verdicts(done.stdout)["python train.py --other"] == "output-differs", done.stdout[-2000:]
    assert "graphs built 3 | graphs built 1" in done.stdout  # the measured counts, as the program printed them
    assert done.returncode == 1
