"""Call-site edits reach every call of the function on a line, and a step that reaches only some says so."""

from __future__ import annotations

from pathlib import Path

from tfretrace.fix.applying.apply import edits_by_file
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.plan import plan_for
from tfretrace.records.events import Leaf, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session

PROGRAM = """import tensorflow as tf


@tf.function
def step(x, lr):
    return x * lr


for i in range(3):
    a = step(x, 0.1 * i); b = step(x, 0.2 * i)
    c = step(x, **{"lr": 0.3 * i})
"""


def _report(path: Path, sites: list[tuple[str, float]], x64: str | None = None) -> FunctionReport:
    events = []
    for number, (site, lr) in enumerate(sites, 1):
        signature = (Leaf("x", "tensor", dtype="float64" if site == x64 else "float32", shape=(2,)),
                     Leaf("lr", "python", value=repr(lr), type_name="float"))
        events.append(TraceEvent(index=number, cause="first-trace" if number == 1 else "python-value-changed",
                                 seconds=0.1, time=float(number), call_site=site, signature=signature))
    return FunctionReport(name="step", location=f"{path}:4", calls=len(events), traces=len(events),
                          trace_seconds=0.1 * len(events), objects=1, events=tuple(events))


def test_both_calls_on_one_line_are_edited(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    line = f"{path}:10"
    report = _report(path, [(line, 0.1), (line, 0.2), (line, 0.3), (line, 0.4)])
    steps = [s for s in plan_for(report, SourceReader()) if s.edits]
    assert [s.kind for s in steps] == ["tensor-argument"]
    assert sorted((e.span.line, e.span.col) for e in steps[0].edits) == [(10, 16), (10, 38)]
    assert steps[0].traces_after == 1


def test_a_step_that_reaches_only_some_call_sites_predicts_only_that_and_lists_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    edited, by_hand = f"{path}:10", f"{path}:11"
    # x is float64 at line 11: no one input_signature takes both dtypes (a signature covering lr
    # would reach every call site at once), so the plan's step is the call-site edit.
    report = _report(path, [(edited, 0.1), (edited, 0.2), (by_hand, 0.3), (by_hand, 0.6)], x64=by_hand)
    planned = [s for s in plan_for(report, SourceReader()) if s.kind == "tensor-argument"]
    assert planned and planned[0].edits
    # The calls at line 11 still pass two Python floats: two traces stay, beside the tensor one.
    assert planned[0].traces_after == 3
    session = Session(functions=(FunctionReport(**{**report.__dict__, "plan": tuple(s.to_dict() for s in planned)}),),
                      wall_seconds=1.0)
    _files, advice = edits_by_file(session, unsafe=True)
    assert [a.where for a in advice if a.unsafe_reason is None] == [by_hand]
    # Without --unsafe-fixes the step (a Python float made a tensor: unsafe) is listed, not made.
    files, advice = edits_by_file(session)
    assert not files and [(a.unsafe_reason is not None, a.applied) for a in advice] == [(True, False)]


def test_a_step_by_hand_on_a_keras_function_points_at_the_user_s_call_site() -> None:
    from tfretrace.fix.planning.step import PlanStep
    from tfretrace.records.events import KerasInfo

    events = tuple(
        TraceEvent(index=n, cause="first-trace" if n == 1 else "shape-changed", seconds=0.01, time=float(n),
                   call_site=site, signature=(Leaf("x", "tensor", dtype="float32", shape=(n, 4)),))
        for n, site in enumerate(["keras/src/backend/tensorflow/trainer.py:640", "app.py:31", "app.py:31"], 1)
    )
    hand = PlanStep("shape-changed", "advice", "pad the batches to one size", None, (), 3, 1, 0.02)
    predict = FunctionReport(
        name="one_step_on_data_distributed", location="keras/src/backend/tensorflow/trainer.py:279", calls=3,
        traces=3, trace_seconds=0.03, objects=1, events=events, plan=(hand.to_dict(),),
        keras=KerasInfo("model", "Sequential", "predict", "app.py:12"),
    )
    _files, advice = edits_by_file(Session(functions=(predict,), wall_seconds=1.0))
    assert [a.where for a in advice] == ["app.py:31"]  # the user's line, not Keras' trainer.py


def test_a_preview_of_two_far_call_sites_shows_each_site_not_the_lines_between(tmp_path: Path) -> None:
    from tfretrace.fix.core.source import Replacement, Span

    path = tmp_path / "far.py"
    body = [f"filler_{n} = {n}\n" for n in range(20)]
    path.write_text("step(x, 0.1)\n" + "".join(body) + "step(x, 0.2)\nstep(x, 0.3)\n")
    file = str(path)
    edits = [Replacement(Span(file, line, 8, line, 11), "tf.constant(lr)") for line in (1, 22, 23)]
    shown = SourceReader().preview(edits)
    assert shown is not None
    # Two groups, each headed by its first line: the 20 lines between the sites are not the step's.
    assert [line for line in shown.splitlines() if line.startswith("# ")] == [f"# {file}:1", f"# {file}:22"]
    assert "filler" not in shown and shown.count("tf.constant(lr)") == 3


def test_an_element_of_a_literal_argument_is_found_but_not_a_key_written_twice(tmp_path: Path) -> None:
    path = tmp_path / "lit.py"
    path.write_text('step((x, k), {"lr": 0.1, "n": 2})\nstep((x, k), {"lr": 0.0, "lr": 0.1 * k})\n')
    first, second = (SourceReader().calls_at(f"{path}:{line}", ("step",), ("data", "hp"))[0] for line in (1, 2))
    assert [(name, text) for name, text, _span in first.parts] == [
        ("data[0]", "x"), ("data[1]", "k"), ("hp['lr']", "0.1"), ("hp['n']", "2")]
    # Python keeps the last "lr": wrapping the first would change nothing, so neither is offered.
    assert second.arg("hp['lr']") is None and second.arg("data[1]") is not None
