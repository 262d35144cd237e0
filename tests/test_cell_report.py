"""The compact report of one notebook cell: the fix it shows is for the causes of that cell."""

from __future__ import annotations

from tfretrace.fix.planning.step import PlanStep
from tfretrace.records.events import Change, Leaf, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.render.notebook import CellRetraces


def _event(index: int, cause: str, change: Change | None = None) -> TraceEvent:
    return TraceEvent(index=index, cause=cause, seconds=0.01, time=float(index), call_site="cell.py:3",
                      signature=(Leaf("x", "tensor", dtype="float32", shape=(2, index)),),
                      changes=(change,) if change else ())


def test_a_cell_that_only_passed_a_new_python_value_shows_the_value_step() -> None:
    shape = PlanStep("shape-changed", "reduce-retracing", "pass reduce_retracing=True", None, (), 4, 2, 0.02)
    value = PlanStep("python-value-changed", "tensor-argument", "pass lr as a float32 tensor", None, (), 2, 1, 0.01)
    events = (_event(1, "first-trace"), _event(2, "shape-changed"), _event(3, "shape-changed"),
              _event(4, "python-value-changed", Change("lr", "python-value", "0.1", "0.2")))
    report = FunctionReport(name="step", location="cell.py:1", calls=4, traces=4, trace_seconds=0.04, objects=1,
                            events=events, plan=(shape.to_dict(), value.to_dict()))
    cell = CellRetraces(((report, events[3:]),))  # this cell made only the Python-value retrace
    fix = next(line for line in cell.text().splitlines() if line.strip().startswith("fix:"))
    assert "python-value-changed" in fix and "reduce_retracing" not in fix
    assert "python-value-changed" in cell.html() and "reduce_retracing" not in cell.html()
    # A cell with shape retraces gets the shape step.
    shaped = CellRetraces(((report, events[1:3]),))
    assert "reduce_retracing" in next(line for line in shaped.text().splitlines() if "fix:" in line)
