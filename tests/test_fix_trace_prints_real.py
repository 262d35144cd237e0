"""A body whose Python prints at each trace: a step that removes traces prints less, so --apply leaves it alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from prog_runs import applied_copy, edited_steps, ran_program, recorded

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import tensorflow as tf


@tf.function
def loud(x):
    print("tracing", x.shape)
    return tf.reduce_sum(x)


@tf.function
def quiet(x):
    return tf.reduce_sum(x)


for n in (2, 3, 4):
    print(float(loud(tf.ones([n]))), float(quiet(tf.ones([n]))))
print("traces", "loud", loud.experimental_get_tracing_count())
print("traces", "quiet", quiet.experimental_get_tracing_count())
"""


def test_the_printing_body_is_unsafe_and_left_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "recorded"
    before, functions = recorded(folder, PROGRAM)
    assert [(s["kind"], s["safety"]) for s in edited_steps(functions["loud"])] == [("input-signature", "unsafe")]
    assert [(s["kind"], s["safety"]) for s in edited_steps(functions["quiet"])] == [("input-signature", "safe")]
    after = ran_program(applied_copy(folder))
    # quiet's signature applied (3 -> 1); loud still traces per shape and prints each "tracing" line.
    assert before.traces == {"loud": 3, "quiet": 3} and after.traces == {"loud": 3, "quiet": 1}
    assert after.results == before.results
