"""A profile that learns: each `tfretrace run --prevent` widens it, keyed by code identity (real TF, subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

HEAD = "import sys\n\nimport tensorflow as tf\n\n"
STEP = '''
@tf.function
def train_step(x):
    return tf.reduce_sum(x * 2.0)
'''
REST = '''

@tf.function
def encode(tokens):
    return tf.reduce_sum(tf.cast(tokens, tf.float32), axis=1)


for n in {"A": [32], "B": [7], "AB": [32, 7]}[sys.argv[1]]:
    train_step(tf.ones([n, 3]))
    encode(tf.ones([2, n + 1], tf.int32))
print("TRACES", train_step.experimental_get_tracing_count(), encode.experimental_get_tracing_count())
'''


def _write(folder: Path, step: str = STEP, above: int = 0) -> None:
    (folder / "train.py").write_text(HEAD + "# a comment line\n" * above + step + REST, encoding="utf-8")


def _run(folder: Path, *args: str) -> tuple[tuple[int, int], subprocess.CompletedProcess[str]]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    env.pop("TFRETRACE_PREVENT", None)
    done = subprocess.run(
        [sys.executable, "-m", "tfretrace", "run", "--no-progress", *args],
        capture_output=True, text=True, cwd=folder, env=env, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("TRACES"))
    step, encode = (int(n) for n in line.split()[1:])
    return (step, encode), done  # TensorFlow's own counts


def _rows(folder: Path, saved: str) -> dict[str, dict[str, object]]:
    data = json.loads((folder / saved).read_text(encoding="utf-8"))
    return {row["name"]: row for row in data["prevention"]["functions"]}


def test_three_runs_widen_the_profile_then_trace_once(tmp_path: Path) -> None:
    _write(tmp_path)
    assert _run(tmp_path, "train.py", "AB")[0] == (2, 2)  # as written: each size traces

    # Run 1 meets sizes A: no profile yet, so it records one.
    assert _run(tmp_path, "--prevent", "profile.json", "train.py", "A")[0] == (1, 1)
    assert (tmp_path / "profile.json").is_file()
    # Run 2 meets sizes B, outside the profile: they trace, and widen it.
    counts, _ = _run(tmp_path, "--prevent", "profile.json", "--save", "r2.json", "train.py", "B")
    assert counts == (1, 1)
    assert json.loads((tmp_path / "r2.json").read_text(encoding="utf-8"))["prevention"]["learned"] == 2
    # Run 3 meets A and B: each function traces once.
    assert _run(tmp_path, "--prevent", "profile.json", "--no-learn", "train.py", "AB")[0] == (1, 1)

    # The function moved 20 lines down its file: the same code, still matched and warmed.
    _write(tmp_path, above=20)
    counts, _ = _run(tmp_path, "--prevent", "profile.json", "--save", "moved.json", "train.py", "AB")
    assert counts == (1, 1)
    assert _rows(tmp_path, "moved.json")["train_step"]["matched"] == "exact"

    # Its body edited: stale, not warmed with the old calls (encode still is) ...
    _write(tmp_path, STEP.replace("2.0", "3.0"), above=20)
    counts, edited = _run(tmp_path, "--prevent", "profile.json", "--save", "edited.json", "train.py", "AB")
    assert counts == (2, 1)
    rows = _rows(tmp_path, "edited.json")
    assert rows["train_step"]["stale"] is True and rows["train_step"]["warmups"] == 0
    assert "stale" in edited.stderr
    # ... and that run taught the profile the new code's calls.
    assert _run(tmp_path, "--prevent", "profile.json", "train.py", "AB")[0] == (1, 1)


def test_no_learn_leaves_the_profile_as_it_was(tmp_path: Path) -> None:
    _write(tmp_path)
    _run(tmp_path, "--prevent", "profile.json", "train.py", "A")
    before = (tmp_path / "profile.json").read_bytes()
    _run(tmp_path, "--prevent", "profile.json", "--no-learn", "train.py", "B")
    assert (tmp_path / "profile.json").read_bytes() == before
    assert _run(tmp_path, "--prevent", "profile.json", "train.py", "AB")[0] == (2, 2)


def _tfretrace(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tfretrace", *args], capture_output=True, text=True, cwd=folder,
                          env=env, timeout=300, check=False)


def test_workers_profiles_merge_into_one(tmp_path: Path) -> None:
    _write(tmp_path)
    _run(tmp_path, "--prevent", "worker0.json", "train.py", "A")
    _run(tmp_path, "--save", "worker1.json", "train.py", "B")  # a saved session is a profile too
    merged = _tfretrace(tmp_path, "profile", "merge", "worker0.json", "worker1.json", "-o", "merged.json")
    assert merged.returncode == 0, merged.stderr
    assert _run(tmp_path, "--prevent", "merged.json", "--no-learn", "train.py", "AB")[0] == (1, 1)


def test_a_malformed_profile_is_one_line_and_status_2(tmp_path: Path) -> None:
    _write(tmp_path)
    bad = {"tfretrace-profile": 1, "functions": [{"key": {"module": "train", "qualname": 3}}]}
    (tmp_path / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
    for args in (("run", "--prevent", "bad.json", "train.py", "A"), ("profile", "merge", "bad.json", "-o", "p.json")):
        result = _tfretrace(tmp_path, *args)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1 and "bad.json" in result.stderr
    assert not (tmp_path / "p.json").exists()
