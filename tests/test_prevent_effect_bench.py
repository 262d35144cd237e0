"""bench/prevent_effect.py's judgements: which output lines count, which retraces are shape-driven."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from sessions import event, session
from tfretrace.records.function_report import FunctionReport

BENCH = Path(__file__).resolve().parents[1] / "bench" / "prevent_effect.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prevent_effect", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["prevent_effect"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


prevent_effect = _bench()


def test_lines_about_traces_are_not_output() -> None:
    assert prevent_effect.program_output("loss 0.5\nTRACES 3\nstep traced 2 times\n") == "loss 0.5\n"


def test_only_shape_changed_retraces_count_as_shape_driven() -> None:
    events = (
        event(1, "first-trace", time=0.0, calls_total=1),
        event(2, "shape-changed", time=1.0, calls_total=2),
        event(3, "python-value-changed", time=2.0, calls_total=3),
    )
    report = FunctionReport("f", "a.py:1", 3, 3, 0.1, 1, events)
    assert prevent_effect.shape_retraces(session(report)) == 1


def test_a_changed_output_is_announced_only_when_the_tool_said_so() -> None:
    reference = prevent_effect.program_output("loss 0.5\nTRACES 3\n")
    assert prevent_effect.judge(reference, "loss 0.5\nTRACES 1\n", announced=False) == "same"
    assert prevent_effect.judge(reference, "loss 0.7\n", announced=True) == "announced"
    assert prevent_effect.judge(reference, "loss 0.7\n", announced=False) == "CHANGED"
