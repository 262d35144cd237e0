"""Advice kind keras-pad: pad Keras predict inputs to one bucket per dimension that varied (made by hand)."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.kind import Maker
from tfretrace.records.events import TENSOR

NAME = "keras-pad"


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
        NAME,
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


# This module declares no edit kind of its own (its steps are other kinds' or advice): its maker is listed here.
MAKERS = (Maker(predict_buckets, 130),)
