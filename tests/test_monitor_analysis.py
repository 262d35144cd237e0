"""Monitor.session() assembles and plans without ever running the program's code again; only analyzed() may."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tfretrace

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")

TRACED: list[int] = []


@tf.function
def step(x):  # type: ignore[no-untyped-def]
    TRACED.append(1)  # the body's trace-time Python
    return tf.reduce_sum(x * 2.0)


def test_session_after_the_program_never_traces_the_bodies_again() -> None:
    with tfretrace.watch(warn=False, log=False) as monitor:
        for n in (3, 4, 5):
            step(tf.ones([n]))
    measured = step.experimental_get_tracing_count()
    assert len(TRACED) == measured == 3
    monitor.program_done = True  # as `tfretrace run` marks it once the program has ended
    session = monitor.session()
    assert session.function("step").traces == 3
    assert len(TRACED) == 3  # no probe: the body's Python did not run again
    assert session.probe_traces is None


def test_recording_loads_no_planner() -> None:
    code = (
        "import sys, tensorflow as tf, tfretrace\n"
        "with tfretrace.watch(warn=False, log=False) as m:\n"
        "    f = tf.function(lambda x: x * 2)\n"
        "    f(tf.ones([2])); f(tf.ones([3]))\n"
        "    recorded = m.record()\n"
        "    print(recorded.functions[0].traces, recorded.functions[0].plan,\n"
        "          [n for n in sys.modules if n.startswith('tfretrace.fix')])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
                             env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "2 () []"
