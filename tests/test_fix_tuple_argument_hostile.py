"""The tuple-argument anchor check, without TensorFlow: where a saved session's list-to-tuple edit may land.

A session file is data from elsewhere. A tuple-argument edit is taken only where it turns a list literal,
passed whole to a call of the function at a line the run recorded a call of it, into a tuple of the same
elements: not an element of a list, not a call of another function of the same name the run never
recorded (``Log().step([...])`` beside the recorded ``model.step([...])``), not other text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tfretrace.fix.applying.anchors import anchors_for
from tfretrace.fix.core.source import Replacement, SourceReader, Span
from tfretrace.fix.kinds import CHECKS
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport

PROGRAM = (
    "import tensorflow as tf\n"  # 1
    "\n"  # 2
    "\n"  # 3
    "@tf.function\n"  # 4
    "def step(batch):\n"  # 5
    "    x, y = batch\n"  # 6
    "    return x * y\n"  # 7
    "\n"  # 8
    "\n"  # 9
    "out = step([a, b])\n"  # 10
    "log = Log().step([a, b])\n"  # 11
    "nested = step([[a], b])\n"  # 12
)
RECORDED = (10, 12)


def _check(tmp_path: Path, edit: Replacement) -> str | None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    events = tuple(TraceEvent(index=n, cause="first-trace" if n == 1 else "structure-changed", seconds=0.01,
                              time=float(n), call_site=f"prog.py:{line}", signature=())
                   for n, line in enumerate(RECORDED, 1))
    report = FunctionReport(name="step", location="prog.py:5", calls=2, traces=2, trace_seconds=0.02, objects=1,
                            events=events)
    anchors = anchors_for(report, SourceReader(tmp_path))
    return CHECKS["tuple-argument"](anchors, edit)


def test_a_recorded_list_literal_written_as_the_tuple_of_its_elements_is_taken(tmp_path: Path) -> None:
    assert _check(tmp_path, Replacement(Span("prog.py", 10, 11, 10, 17), "(a, b)")) is None


@pytest.mark.parametrize(
    "edit",
    [
        Replacement(Span("prog.py", 11, 17, 11, 23), "(a, b)"),  # another class's step, never recorded
        Replacement(Span("prog.py", 12, 15, 12, 18), "(a,)"),  # an element of the list, not the argument
        Replacement(Span("prog.py", 10, 11, 10, 17), "(b, a)"),  # not the same elements
        Replacement(Span("prog.py", 10, 11, 10, 17), "(__import__('os').system('id'), b)"),
        Replacement(Span("prog.py", 10, 6, 10, 10), "(step,)"),  # the callee
    ],
)
def test_other_edits_labelled_tuple_argument_are_refused(tmp_path: Path, edit: Replacement) -> None:
    assert _check(tmp_path, edit) is not None
