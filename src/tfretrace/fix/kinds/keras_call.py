"""Fix kind keras-call: ``model.predict(x)`` of small inputs made ``model(x, training=False)``; maker, anchors.

Safe only where the live model said so: once the program has finished (``run --save``, ``run
--fix-plan``), each model whose predict the step replaces ran ``predict`` and the call on inputs of
every recorded shape and dtype (``tfretrace._tf.keras_call_check``; each event's ``KerasInfo.call``)
and gave the same arrays, bit for bit or in the last digits (the step then says ``float-last-digits``).
A model with its own ``predict_step``, several outputs, or a call with effects beyond its outputs
(a variable or a layer attribute updated, a print) stays unsafe with what differed; a run that asked
nothing (a plain run, a session from before) leaves the step unsafe and unasked.
"""

from __future__ import annotations

import ast

from tfretrace.fix.core.anchor_base import Anchors, expression, span_of
from tfretrace.fix.core.anchor_moves import recorded_sites
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.kind import CHANGES_FLOAT_DIGITS, Kind, Maker, Row
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.source import Replacement, is_user_path
from tfretrace.records.events import CALL_DIGITS, CALL_SAME, TENSOR, TraceEvent

NAME = "keras-call"


# predict's own keywords that calling the model does not need (they only steer predict's loop).
_LOOP_KEYWORDS = frozenset({"verbose", "batch_size"})
# Calling the model runs the whole input as one batch: only for inputs this small.
_FEW_ROWS = 1024


def predict_as_call(ctx: FunctionContext, state: State) -> Candidate | None:
    """``model.predict(x)`` -> ``model(x, training=False).numpy()``: no predict function is traced at all.

    Offered where every recorded call of predict passed one array of at most ``_FEW_ROWS`` rows
    and nothing but ``verbose``/``batch_size``, at call sites in the user's files. The result is
    the same NumPy array (``.numpy()``); a model with several outputs returns no tensor and fails
    loudly at ``.numpy()`` instead of returning something else.
    """
    keras = ctx.report.keras
    calls = state.replay.calls
    if keras is None or keras.method != "predict" or not calls or state.keras_padded:
        return None
    if any(e.keras is not None and (e.keras.step or 0) > 0 for e in ctx.report.events):
        return None  # a trace past predict's first batch: inputs of several batches, not a few rows
    for call in calls:
        tensors = [leaf for leaf in call.signature if leaf.kind == TENSOR]
        if len(tensors) != 1 or not tensors[0].shape or (tensors[0].shape[0] or 0) > _FEW_ROWS:
            return None
    edits = []
    for site in ctx.sites(calls):
        found = _predict_call(ctx, site)
        if isinstance(found, str):
            # Said, not silently dropped: the user sees why the simplest fix is not offered.
            return Candidate("shape-changed", "statement", found, None)
        if found is None:
            return None
        edits.append(found)
    if not edits:
        return None
    answer, compared, digits = _asked(ctx.report.events)
    return Candidate(
        "shape-changed",
        NAME,
        f"call the model instead of {keras.method} for these small inputs (model(x, training=False).numpy(): "
        "the same NumPy result, no predict function to trace)" + (_DIGITS_NOTE if digits else ""),
        ctx.reader.preview(edits),
        tuple(edits),
        state.map_calls(dict.fromkeys((c.index for c in calls), None)),
        tf_check=answer,
        compared=compared,
        changes=CHANGES_FLOAT_DIGITS if digits else None,
    )


_DIGITS_NOTE = "; floats may differ in the last digits (the call computes the input in one batch, as the check saw)"


def _asked(events: tuple[TraceEvent, ...]) -> tuple[str | None, int, bool]:
    """What the live models said (TF_CHECKED, or what differed; None: not asked), on how many inputs, and
    whether only in the last digits (runtime.predict_rows stores it on each event)."""
    said = [(e.keras.call, e.keras.call_inputs) for e in events if e.keras is not None]
    differs = next((v for v, _n in said if v is not None and v not in (CALL_SAME, CALL_DIGITS)), None)
    if differs is not None:
        return f"model(x, training=False) is not this model's predict: {differs}", 0, False
    if not said or any(v is None for v, _n in said):
        return None, 0, False
    return TF_CHECKED, min(n or 0 for _v, n in said), any(v == CALL_DIGITS for v, _n in said)


def _predict_call(ctx: FunctionContext, site: str) -> Replacement | str | None:
    """The edit of the ``predict`` call at ``site``; None where there is none; a sentence where
    one would be made but the program forbids it (it reads ``predict_function``)."""
    path, _, line_text = site.rpartition(":")
    if not is_user_path(path) or not line_text.isdigit():
        return None
    parsed = ctx.reader.module(path)
    if parsed is None:
        return None
    line = int(line_text)
    found = [
        node
        for node in ast.walk(parsed[1])
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "predict"
        and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    if len(found) != 1:
        return None
    node = found[0]
    if _names_a_dataset(parsed[1], node):
        return None  # the model cannot take a tf.data pipeline
    if len(node.args) != 1 or isinstance(node.args[0], ast.Starred) or {k.arg for k in node.keywords} - _LOOP_KEYWORDS:
        return None
    # Code that reads the attribute, not a docstring or comment that names it.
    reads = sorted(
        n.lineno for n in ast.walk(parsed[1]) if isinstance(n, ast.Attribute) and n.attr == "predict_function"
    )
    if reads:
        return (f"calling the model instead of predict at {site} (model(x, training=False).numpy()) is not "
                f"offered: {path}:{reads[0]} reads model.predict_function, which the call would leave untraced")
    assert isinstance(node.func, ast.Attribute)
    model = ctx.reader.text(span_of(node.func.value, path))
    data = ctx.reader.text(span_of(node.args[0], path))
    return Replacement(span_of(node, path), f"{model}({data}, training=False).numpy()")


def _names_a_dataset(tree: ast.Module, call: ast.Call) -> bool:
    """Whether predict's input is a name some statement binds to a tf.data pipeline (the model cannot take one)."""
    arg = call.args[0] if call.args else None
    if not isinstance(arg, ast.Name):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == arg.id for t in node.targets):
            text = ast.unparse(node.value)
            if "Dataset" in text or ".batch(" in text or "data." in text:
                return True
    return False


def keras_call(anchors: Anchors, edit: Replacement) -> str | None:
    """``model.predict(x)`` -> ``model(x, training=False).numpy()``, receiver and argument unchanged."""
    keras = anchors.report.keras
    if keras is None or keras.method != "predict":
        return "not a Keras predict function"
    tree = anchors.tree(edit.span.path)
    # A call of predict at one of the recorded call sites, as the planner edits them.
    numbers = (site.rpartition(":")[2] for site in recorded_sites(anchors, edit))
    lines = {int(n) for n in numbers if n.isdigit()}
    found = None if tree is None else next((
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and span_of(n, edit.span.path) == edit.span
        and isinstance(n.func, ast.Attribute) and n.func.attr == "predict"
        and any(n.lineno <= line <= (n.end_lineno or n.lineno) for line in lines)
    ), None)
    if found is None or not isinstance(found.func, ast.Attribute):
        return "not a .predict() call at a recorded call site"
    if len(found.args) != 1 or isinstance(found.args[0], ast.Starred) or {
        k.arg for k in found.keywords
    } - _LOOP_KEYWORDS:
        return "not a .predict() call of one input"
    wanted = ast.parse(
        f"({ast.unparse(found.func.value)})({ast.unparse(found.args[0])}, training=False).numpy()", mode="eval"
    ).body
    new = expression(edit.text)
    if new is None or ast.dump(new) != ast.dump(wanted):
        return "the new text is not the model called on the same input, training=False, .numpy()"
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        "model(x, training=False) is not Model.predict: a model overriding predict_step returns other values, a "
        "model with several outputs gives a list, and a large input is computed in one batch (more memory); "
        "the live model was not run both ways",
        "no predict function to trace; the live model, once the program has finished, ran predict and the call on "
        "inputs of every recorded shape and dtype and gave the same arrays",
        probed=True,
    ),
    check=keras_call,
    row=Row(
        "safe when TensorFlow says so (the live model run both ways)",
        "once the program has finished (`run --save`, `run --fix-plan`), each model whose `predict` the step "
        "replaces runs `predict(x)` and `model(x, training=False).numpy()` on inputs of every recorded shape and "
        "dtype (the rows `predict` kept, and draws), its variables and layers' public attributes read before "
        "and restored after each run; safe (`\"checked\": \"tensorflow\"`, `checked_inputs`) where every output "
        "is the same array, bit for bit or in the last digits (`float-last-digits`). Unsafe, saying what "
        "differed, where the model defines its own `predict_step` (not run), returns several outputs (a list "
        "has no `.numpy()`), or a run changed a variable or an attribute or printed; unasked (a plain run) "
        "unsafe: `model(x, training=False)` is not `Model.predict`. A large input is computed in one batch: "
        "only calls of at most 1024 rows, each traced at predict's first batch, are rewritten",
        "`p10_predict_step.py` (item 10)",
    ),
    position=170,
    makers=(Maker(predict_as_call, 120),),
)
