"""A SavedModel saved and restored in one program: the saving function's applied signature, seen from the restored one.

``tf.saved_model.save`` writes one concrete function per signature the saving tf.function has; the
function ``tf.saved_model.load`` restores traces once per input signature it is called with
(cause ``restored-new-signature``). Once ``tfretrace fix --apply`` gives the saving function an
``input_signature``, one concrete function is written and the restored function serves every call
it covers without tracing again: its plan says so, as a step made by ``--apply`` through the saving
function's edit. Where the restored calls pass a signature the saving function was never called
with, the applied signature might refuse them: the saving function's step is then left by hand.
"""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.kinds import BY_NAME, REGISTRY
from tfretrace.fix.planning.step import (
    BY_TOOL,
    CHANGES_FLOAT_DIGITS,
    CHANGES_SAVED_SIGNATURE,
    PlanStep,
    fix_counts,
    numbered,
)
from tfretrace.records.events import Leaf
from tfretrace.records.function_report import FunctionReport

RESTORED_SUFFIX = " (restored by tf.saved_model.load)"
# The step a saved model's signature gets (a kind with no edit of its own: the declaring step makes it).
SAVED_SIGNATURE = BY_NAME["saved-signature"].name
_DECLARING = frozenset(kind.name for kind in REGISTRY if kind.declares_signature)
_RESTORED_CAUSES = frozenset({"first-trace", "restored-new-signature", "restored-reloaded"})


# tf.saved_model.save without signatures= exports the one tf.function of the saved object that has
# an input_signature as its serving_default signature (find_function_to_export in TensorFlow's
# signature_serialization): declaring one adds a signature to the SavedModel.
SERVING_DEFAULT = (
    "; the SavedModel then also has a serving_default signature of this function, when it is saved without "
    "signatures= and is the only tf.function with an input_signature on the saved object"
)

# A step that changes the calls of a function written into a SavedModel leaves fewer traces to write.
FEWER_SAVED = (
    "; the SavedModel this function is saved into then holds only the concrete functions of the calls as "
    "edited, and a program that loads it must call it so"
)


def announce_serving(report: FunctionReport, step: PlanStep) -> PlanStep:
    """A declaring step of a function written into a SavedModel, saying the signature it adds there.

    ``changes`` keeps a value already set (a random stream is a change of results); the sentence is added.
    """
    if not _saved(report):
        return step
    if step.kind in _DECLARING:
        said = SERVING_DEFAULT
    elif _changes_calls(step):
        said = FEWER_SAVED
    else:
        return step
    # The saved signatures take precedence over the last digits (step.CHANGES), not over a random stream.
    changes = CHANGES_SAVED_SIGNATURE if step.changes in (None, CHANGES_FLOAT_DIGITS) else step.changes
    return replace(step, changes=changes, summary=step.summary + said)


def link_restored(functions: tuple[FunctionReport, ...]) -> tuple[FunctionReport, ...]:
    """The reports with restored functions' plans told what the saving function's applied step changes."""
    changed = _calls_changed(functions)
    out = [changed.get(i, report) for i, report in enumerate(functions)]
    rows: dict[int, list[int]] = {}  # saving function -> its restored rows
    for i, restored in enumerate(functions):
        saver = _saver(functions, restored)
        if saver is not None:
            rows.setdefault(functions.index(saver), []).append(i)
    for j, linked in rows.items():
        if j in changed:
            continue
        saver = functions[j]
        steps = [PlanStep.from_dict(dict(s)) for s in saver.plan]
        declared = [(n, s) for n, s in numbered(steps) if s.kind in _DECLARING and s.by == BY_TOOL]
        if not declared:
            continue
        number, step = declared[-1]
        uncovered = [functions[i] for i in linked if not _covered(saver, functions[i])]
        if uncovered:
            # One restored row the signature might refuse is enough: no row counts on it.
            plan = tuple((_by_hand(s, _unseen_signatures(uncovered[0])) if s is step else s).to_dict() for s in steps)
            out[j] = replace(saver, plan=plan, fix_counts=fix_counts(plan))
            continue
        for i in linked:
            out[i] = _with_step(out[i], saver, number, step)
    return tuple(out)


def _calls_changed(functions: tuple[FunctionReport, ...]) -> dict[int, FunctionReport]:
    """Saving functions whose calls a step changes, where the run also called a restored function of that
    name (in any file), by index: that step and the later ones made by hand.

    The SavedModel would hold other concrete functions than the ones the restored calls found in this
    run, and a restored call matching none of them fails. A later step's count assumes the earlier ones.
    """
    changed: dict[int, FunctionReport] = {}
    for j, saver in enumerate(functions):
        if not _saved(saver):
            continue
        short = saver.name.rsplit(".", 1)[-1]
        restored = [f for f in functions if f.name.endswith(RESTORED_SUFFIX) and f.events
                    and f.name[: -len(RESTORED_SUFFIX)] == short]
        steps = [PlanStep.from_dict(dict(s)) for s in saver.plan]
        changing = next((n for n, s in enumerate(steps) if _changes_calls(s)), None)
        if not restored or changing is None:
            continue
        why = _fewer_saved(restored[0])
        plan = tuple((_by_hand(s, why) if n >= changing and s.edits else s).to_dict() for n, s in enumerate(steps))
        changed[j] = replace(saver, plan=plan, fix_counts=fix_counts(plan))
    return changed


def _saved(report: FunctionReport) -> bool:
    """Whether ``tf.saved_model.save`` wrote this function into a SavedModel in the run."""
    return any(e.cause == "saved-model-export" for e in report.events)


def _saver(functions: tuple[FunctionReport, ...], restored: FunctionReport) -> FunctionReport | None:
    # The one function of this run that was written into a SavedModel under the restored name, same file.
    if not restored.name.endswith(RESTORED_SUFFIX) or not restored.events:
        return None
    if any(e.cause not in _RESTORED_CAUSES for e in restored.events):
        return None
    short = restored.name[: -len(RESTORED_SUFFIX)]
    path = restored.location.rpartition(":")[0]
    named = [
        f for f in functions
        if f is not restored and f.name.rsplit(".", 1)[-1] == short and f.location.rpartition(":")[0] == path
    ]
    if len({f.name for f in named}) > 1:
        # Two classes' methods of one name (an export wrapper's __call__ calling the model's): the
        # restored name does not say which object was saved. The model's re-traces inside the
        # save do not make it the saved one (tensorflow/docs mlp_core saves the wrapper).
        return None
    found = [f for f in named if _saved(f)]
    return found[0] if len(found) == 1 else None


def _key(leaves: tuple[Leaf, ...]) -> tuple[tuple[str, str, str | None, object], ...]:
    return tuple((leaf.path, leaf.kind, leaf.dtype, leaf.shape) for leaf in leaves)


def _covered(saver: FunctionReport, restored: FunctionReport) -> bool:
    # Every restored call passed a signature the saving function was called with: the applied
    # signature, which covers every call of the saving function, covers them too.
    seen = {_key(e.signature) for e in saver.events}
    return all(_key(e.signature) in seen for e in restored.events)


def _with_step(restored: FunctionReport, saver: FunctionReport, number: int, made: PlanStep) -> FunctionReport:
    if any(s.get("kind") == SAVED_SIGNATURE for s in restored.plan):
        return restored
    new = sum(1 for e in restored.events if e.cause == "restored-new-signature")
    if new == 0:
        return restored
    traces = len(restored.events)
    per_trace = restored.trace_seconds / max(traces, 1)
    step = PlanStep(
        cause="restored-new-signature",
        kind=SAVED_SIGNATURE,
        summary=f"step {number} of {saver.display_name()} ({saver.location}) gives it an input_signature: the "
        f"SavedModel then holds one concrete function, and the restored function traces once for the {new + 1} "
        "input signatures it was called with (made by tfretrace fix --apply, through that step)" + SERVING_DEFAULT,
        code=None,
        edits=(),
        traces_before=traces,
        traces_after=traces - new,
        seconds_saved=new * per_trace,
        changes=CHANGES_SAVED_SIGNATURE,
        # Made through the saving function's step: as safe as that step.
        safety=made.safety,
        unsafe_reason=None if made.unsafe_reason is None else f"through step {number}: {made.unsafe_reason}",
        unasked=made.unasked,
    )
    plan = (step.to_dict(), *restored.plan)
    return replace(restored, plan=plan, fix_counts=fix_counts(plan))


def _changes_calls(step: PlanStep) -> bool:
    # A step of the tool that removes traces without declaring a signature: the calls it leaves
    # trace fewer concrete functions (None made zeros, a number made a tensor), and the SavedModel
    # written from them holds only those.
    return (step.by == BY_TOOL and bool(step.edits) and step.kind not in _DECLARING
            and step.traces_after < step.traces_before)


def _by_hand(step: PlanStep, why: str) -> PlanStep:
    return replace(step, edits=(), summary=f"{step.summary} (by hand: {why})", safety="advice", unsafe_reason=None)


def _unseen_signatures(restored: FunctionReport) -> str:
    return (f"{restored.display_name()} is called at {restored.location} with input signatures this function "
            "never was; check the signature accepts them before declaring it")


def _fewer_saved(restored: FunctionReport) -> str:
    return (f"this function is saved into a SavedModel that {restored.display_name()} restores and calls at "
            f"{restored.location}; with fewer traces the SavedModel holds fewer concrete functions, and a restored "
            "call may match none of them")
