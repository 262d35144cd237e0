"""Keras fixes at the user's call site: call the model for small inputs, or pad predict inputs to one bucket."""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.source import Replacement, Span, is_user_path
from tfretrace.records.events import TENSOR

_PREDICT = ("predict", "predict_on_batch")


def predict_buckets(ctx: FunctionContext, state: State) -> Candidate | None:
    """Pad every dimension that varied to its largest size seen, so predict sees one shape."""
    keras = ctx.report.keras
    calls = state.replay.calls
    if keras is None or keras.method not in _PREDICT or len(calls) < 2 or state.keras_padded:
        return None
    widest: dict[str, list[int | None]] = {}
    varied: dict[str, set[int]] = {}
    for call in calls:
        for leaf in call.signature:
            if leaf.kind != TENSOR or leaf.shape is None:
                continue
            # Keras 2 predicts through a dataset iterator whose spec leaves the batch dimension
            # open (None): such a dimension never varies and is not padded.
            dims = list(leaf.shape)
            known = widest.setdefault(leaf.path, dims)
            if len(known) != len(dims):
                return None  # a rank change cannot be padded away
            for i, (a, b) in enumerate(zip(known, dims)):
                if a is None or b is None:
                    known[i] = None
                    continue
                if a != b:
                    varied.setdefault(leaf.path, set()).add(i)
                known[i] = max(a, b)
    for path, dims in widest.items():
        if path in varied:
            varied[path] = {i for i in varied[path] if dims[i] is not None}
    varied = {path: found for path, found in varied.items() if found}
    if not varied:
        return None
    new = {}
    for call in calls:
        sig = tuple(
            replace(leaf, shape=tuple(widest[leaf.path])) if leaf.kind == TENSOR and leaf.path in widest else leaf
            for leaf in call.signature
        )
        new[call.index] = replace(call, signature=sig)
    first = next(iter(varied))
    top = widest[first]
    # predict splits x into batches of its batch size and a last, partial one: the rows are
    # padded up to a multiple of the largest batch seen, passed as batch_size, so every batch is
    # full; x itself may be any length (513 rows), far more than one batch. predict_on_batch
    # takes x as one batch: there the rows are padded to the largest batch, like other dims.
    rows = keras.method == "predict" and 0 in varied[first]
    # Calls served by a relaxed (None) trace were never recorded: they may be larger than any
    # size seen, so the bucket is "at least" the largest recorded size, for the user to set.
    relaxed = _relaxed_dims(ctx, first) & varied[first] - ({0} if rows else set())
    sizes = {i: (f"MAX_DIM{i}" if i in relaxed else str(top[i])) for i in varied[first]}
    pads = ", ".join(
        "(0, -rows % BATCH)" if rows and i == 0
        else f"(0, {sizes[i]} - x.shape[{i}])" if i in varied[first] else "(0, 0)"
        for i in range(len(top))
    )
    opened = ", ".join(
        f"rows to a multiple of {top[i]}, predict's batch size" if rows and i == 0
        else f"dim {i} to {'at least ' if i in relaxed else ''}{top[i]}"
        for i in sorted(varied[first])
    )
    if relaxed:
        opened += "; calls after the relaxed trace were not recorded, so set MAX_DIM to your largest input"
    site = ", ".join(ctx.sites(calls)) or "the call site"
    others = sorted(varied[first] - {0})
    # Padding a dimension other than the rows changes what most models compute (a pooling layer
    # averages the padding in): said in the code, so the advice is taken knowingly.
    masked = (
        f"# padding dim {', '.join(map(str, others))} changes the predictions unless the model masks the padding "
        "(a Masking layer, mask_zero=True): check that first\n"
        if others else ""
    )
    batch = ", batch_size=BATCH" if rows else ""
    code = (
        f"# {site}: pad every dimension that varies ({opened}) so {keras.method} sees one shape,\n"
        f"# then cut the padding off the result (pad values must not change the kept rows: mask or slice)\n"
        + masked
        + (f"BATCH = {top[0]}  # every batch predict makes then has BATCH rows\n" if rows else "")
        + "".join(f"MAX_DIM{i} = {top[i]}  # at least; your largest input\n" for i in sorted(relaxed))
        + "rows = x.shape[0]\n"
        + f"x_padded = np.pad(x, [{pads}])\n"
        f"y = model.{keras.method}(x_padded{batch})[:rows]\n"
        f"# for a few small inputs, skip predict's machinery entirely: y = model(x, training=False)"
    )
    return Candidate(
        "shape-changed",
        "keras-pad",
        f"pad {keras.method} inputs to one bucket ({opened}); for small inputs model(x, training=False) "
        "traces no predict function at all",
        code,
        (),
        state.map_calls(dict(new)),
    )


def _relaxed_dims(ctx: FunctionContext, path: str) -> set[int]:
    dims: set[int] = set()
    for event in ctx.report.events:
        for leaf in event.traced_as or ():
            if leaf.path == path and leaf.kind == TENSOR and leaf.shape is not None:
                dims.update(i for i, d in enumerate(leaf.shape) if d is None)
    return dims


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
    return Candidate(
        "shape-changed",
        "keras-call",
        f"call the model instead of {keras.method} for these small inputs (model(x, training=False).numpy(): "
        "the same NumPy result, no predict function to trace)",
        ctx.reader.preview(edits),
        tuple(edits),
        state.map_calls(dict.fromkeys((c.index for c in calls), None)),
    )


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
    if "predict_function" in parsed[0]:
        reader = next((i + 1 for i, text in enumerate(parsed[0].splitlines()) if "predict_function" in text), 0)
        return (f"calling the model instead of predict at {site} (model(x, training=False).numpy()) is not "
                f"offered: {path}:{reader} reads model.predict_function, which the call would leave untraced")
    assert isinstance(node.func, ast.Attribute)
    model = ctx.reader.text(_span(path, node.func.value))
    data = ctx.reader.text(_span(path, node.args[0]))
    return Replacement(_span(path, node), f"{model}({data}, training=False).numpy()")


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


def _span(path: str, node: ast.expr) -> Span:
    return Span(path, node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)
