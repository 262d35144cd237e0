"""A signature TensorFlow cannot trace is never written; one it can, where only the open one fails, is.

``rows_total`` unstacks its rows: every signature that leaves the row count open raises while
TensorFlow traces it (``Cannot infer argument num``), so the input-signature step is left by hand with
what TensorFlow raised, and reduce_retracing (whose relaxed trace would raise the same) is not offered:
``--apply --unsafe-fixes`` once wrote it, and the program failed at its second call. ``framed`` reads
``x.shape[1]`` (constant) while its rows vary: the all-open signature fails there, the one written (rows
open, 8 columns) traces, and TensorFlow's own counter sees one trace after ``--apply``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prog_runs import edited_steps, ran_program, recorded
from prog_runs import run_in as _run

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import sys

import tensorflow as tf

sizes = [int(n) for n in sys.argv[1:]] or [2, 3, 4]


@tf.function
def rows_total(x):
    return tf.add_n(tf.unstack(x))


@tf.function
def framed(x):
    frames = tf.reshape(x, [-1, 2, x.shape[1] // 2])
    return tf.reduce_sum(frames, axis=[1, 2])


for rows in sizes:
    x = tf.reshape(tf.range(rows * 8, dtype=tf.float32), [rows, 8])
    print("rows_total", rows, rows_total(x).numpy().tolist())
    print("framed", rows, framed(x).numpy().tolist())
print("traces", "rows_total", rows_total.experimental_get_tracing_count())
print("traces", "framed", framed.experimental_get_tracing_count())
"""


def test_a_signature_tensorflow_cannot_trace_is_left_by_hand_and_the_one_it_can_is_applied(tmp_path: Path) -> None:
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, PROGRAM)

    unstacked = functions["rows_total"]["plan"]
    assert not edited_steps(functions["rows_total"])  # neither reduce_retracing nor the signature is written
    (signature,) = [s for s in unstacked if s["kind"] == "input-signature"]
    assert signature["safety"] == "advice" and signature["refused"].startswith("ValueError")
    assert not [s for s in unstacked if s["kind"] == "reduce-retracing" and s.get("edits")]

    (framed,) = edited_steps(functions["framed"])
    assert (framed["kind"], framed["safety"], framed.get("checked")) == ("input-signature", "safe", "tensorflow")
    assert "shape=[None, 8]" in framed["code"]

    for options in ((), ("--unsafe-fixes",)):
        copy = tmp_path / f"applied{len(options)}"
        shutil.copytree(folder, copy)
        done = _run(copy, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
        assert done.returncode == 0, done.stderr[-3000:]
        after = ran_program(copy)
        assert before.traces == {"rows_total": 3, "framed": 3}
        assert after.traces == {"rows_total": 3, "framed": 1}
        assert after.results == before.results
        # Other data (5 rows, then 1): the same results, and the signature written takes both.
        other, original = ran_program(copy, "prog.py", "5", "1"), ran_program(folder, "prog.py", "5", "1")
        assert other.results == original.results and other.traces == {"rows_total": 2, "framed": 1}
