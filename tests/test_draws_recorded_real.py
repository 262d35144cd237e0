"""A random draw is read from each trace's graph as it is made: a fix plan announces it where the function is gone.

``step`` is a def nested in ``run`` (a new tf.function per call, gone when ``run`` returns) whose body
shows no draw: ``noisy``, a helper it calls, draws through ``tf.nn.dropout``. The probe, which reads the
graphs of live functions once the run is over, finds nothing to read; the draw was read as each trace
was made, so the session keeps it and the plan's steps say they change the random stream.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prog_runs import edited_steps, recorded

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAM = """\
import tensorflow as tf

tf.random.set_seed(1)


def noisy(x):
    return tf.nn.dropout(x, 0.5)  # a draw the traced def does not show


def plain(x):
    return x * 2.0


def run(sizes, helper):
    @tf.function
    def step(x):
        return tf.reduce_sum(helper(x))

    out = [float(step(tf.ones((n, 2)))) for n in sizes]
    print("traces", helper.__name__, step.experimental_get_tracing_count())
    return out


print(run([4, 3, 2], noisy))
print(run([4, 3, 2], plain))
"""


def test_a_draw_in_a_helper_of_a_gone_function_is_announced(tmp_path: Path) -> None:
    before, functions = recorded(tmp_path / "recorded", PROGRAM)
    assert before.traces == {"noisy": 3, "plain": 3}
    step = functions["run.<locals>.step"]
    assert step["draw"]  # read from the graphs as they were made
    changes = {s["changes"] for s in edited_steps(step)}
    assert changes and all(c is not None and "random-stream" in c for c in changes)
