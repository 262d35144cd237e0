"""A function saved and restored in one run: the restored row's plan follows the saving function's applied step."""

from __future__ import annotations

from dataclasses import replace

from sessions import event, tensor
from tfretrace.fix.core.source import Replacement, Span
from tfretrace.fix.planning.plan import PlanStep, applied_count, plan_steps
from tfretrace.fix.planning.restored import link_restored
from tfretrace.records.function_report import FunctionReport

SIGNATURE = Replacement(Span("prog.py", 5, 5, 5, 16), "tf.function(input_signature=[tf.TensorSpec([None])])")


def saver(*shapes: int) -> FunctionReport:
    events = [
        replace(event(i + 1, "first-trace" if i == 0 else "shape-changed", time=i, calls_total=i + 1,
                      signature=(tensor("x", n),)), call_site="prog.py:20")
        for i, n in enumerate(shapes)
    ]
    events += [
        replace(event(len(events) + i + 1, "saved-model-export", time=9, calls_total=len(shapes),
                      signature=(tensor("x", n),)), call_site="prog.py:22")
        for i, n in enumerate(shapes)
    ]
    step = PlanStep("shape-changed", "input-signature", "one signature", None, (SIGNATURE,), len(events), 2, 0.01,
                    final=True)
    return FunctionReport(name="Scaler.scale", location="prog.py:6", calls=len(shapes), traces=len(events),
                          trace_seconds=0.02, objects=1, events=tuple(events), plan=(step.to_dict(),))


def restored(*shapes: int) -> FunctionReport:
    causes = ["first-trace"] + ["restored-new-signature"] * (len(shapes) - 1) + ["restored-reloaded"]
    events = tuple(
        replace(event(i + 1, cause, time=10 + i, calls_total=i + 1, signature=(tensor("x", n),)),
                call_site="prog.py:25")
        for i, (cause, n) in enumerate(zip(causes, [*shapes, shapes[0]], strict=True))
    )
    return FunctionReport(name="scale (restored by tf.saved_model.load)", location="prog.py:25", calls=5,
                          traces=len(events), trace_seconds=0.01, objects=2, events=events)


def test_the_restored_row_counts_what_the_saving_functions_signature_removes() -> None:
    saving, loaded = link_restored((saver(2, 3), restored(2, 3)))
    steps = plan_steps(loaded)
    assert [(s.kind, s.by, s.traces_before, s.traces_after) for s in steps] == [
        ("saved-signature", "tfretrace", 3, 2)
    ]
    # The reload trace stays: only the new signature goes, through the saving function's signature,
    # which is unsafe (open dimensions): so only with --unsafe-fixes.
    assert (applied_count(steps), applied_count(steps, unsafe=True)) == (3, 2)
    # the SavedModel gains a serving_default signature: said in the restored function's step too
    assert steps[0].changes == "saved-model-signature"
    assert PlanStep.from_dict(steps[0].to_dict()).changes == "saved-model-signature"
    assert plan_steps(saving)[0].edits == (SIGNATURE,)


def test_restored_calls_the_saving_function_never_had_leave_its_signature_by_hand() -> None:
    # The restored function is called with shape 5: a signature from 2 and 3 might pin it out.
    saving, loaded = link_restored((saver(2, 2), restored(2, 5)))
    (step,) = plan_steps(saving)
    assert (step.kind, step.by, step.edits) == ("input-signature", "hand", ())
    assert [s.kind for s in plan_steps(loaded)] == []


def test_without_a_saving_function_of_that_name_nothing_changes() -> None:
    other = replace(saver(2, 3), name="Scaler.shift")
    assert link_restored((other, restored(2, 3))) == (other, restored(2, 3))


def test_one_uncovered_restored_row_leaves_the_signature_by_hand_in_any_order() -> None:
    covered = restored(2, 3)
    uncovered = replace(restored(2, 5), location="prog.py:30")
    for rows in ((covered, uncovered), (uncovered, covered)):
        out = link_restored((saver(2, 3), *rows))
        assert [s.by for s in plan_steps(out[0])] == ["hand"]
        assert all(s.kind != "saved-signature" for row in out[1:] for s in plan_steps(row))
