"""Fix kind drop-remainder: ``drop_remainder=True`` on the ``.batch()`` of a smaller last batch; maker, anchors."""

from __future__ import annotations

import ast

from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.defs import spans_line
from tfretrace.fix.core.kind import CHANGES_EXAMPLES, Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import BatchCall, Replacement, Span
from tfretrace.records.events import SPEC, TENSOR, Leaf

NAME = "drop-remainder"


def drop_remainder(ctx: FunctionContext, state: State) -> Candidate | None:
    """drop_remainder=True when the only new shape is a smaller last batch."""
    calls = state.replay.calls
    if len(calls) < 2 or ctx.report.keras is not None:
        return None
    full = calls[0].signature
    if any(leaf.kind == SPEC and "PerReplica" in (leaf.type_name or "") for leaf in full):
        return None  # per-replica batches: the distributed dataset's element_spec keeps every example
    batch = _batch_size(full)
    if batch is None:
        return None
    partial: dict[int, Call | None] = {}
    for call in calls[1:]:
        if _same_but_batch(full, call.signature, batch):
            partial[call.index] = None
        elif tuple(call.signature) != tuple(full) and not _same_but_batch(full, call.signature, None):
            return None
    if not partial:
        return None
    full_sites = {c.site for c in calls if c.index not in partial}
    if any(c.site not in full_sites for c in calls if c.index in partial):
        return None  # a smaller batch from another call site is another pipeline's, not a remainder
    sizes = sorted({_batch_size(c.signature) or 0 for c in calls if c.index in partial})
    if len(sizes) != 1:
        return None  # several smaller sizes are not one dataset's remainder (buckets, other datasets)
    edits: tuple[Replacement, ...] = ()
    where = "the .batch() call"
    batch_calls: list[BatchCall] = []
    for path in {s.rpartition(":")[0] for s in ctx.sites(calls)} | ({ctx.definition.path} if ctx.definition else set()):
        # A batch() call written with another literal size is not the one that made these batches.
        batch_calls.extend(
            b for b in ctx.reader.batch_calls(path) if not b.has_drop_remainder and b.size in (None, batch)
        )
    if len(batch_calls) > 1:
        # Several datasets are batched (training and validation, say): keep the one whose batches
        # the recorded call sites loop over.
        looped = {_loop_dataset(ctx, site) for site in ctx.sites(calls)} - {None}
        batch_calls = [b for b in batch_calls if b.assigned_to is not None and b.assigned_to in looped]
    if len(batch_calls) == 1:
        found = batch_calls[0]
        end = Span(
            found.span.path, found.span.end_line, found.span.end_col - 1, found.span.end_line, found.span.end_col - 1
        )
        edits = (Replacement(end, ", drop_remainder=True"),)
        where = f"{found.span.path}:{found.span.line}"
        code = f"# {where}\n{found.text[:-1]}, drop_remainder=True)"
    else:
        code = f"dataset = dataset.batch({batch}, drop_remainder=True)"
    return Candidate(
        "shape-changed",
        NAME,
        f"drop the last partial batch ({', '.join(map(str, sizes))} examples, batch size {batch}) at {where}: "
        "every step then has one shape (it skips those examples each epoch)",
        code,
        edits,
        state.map_calls(partial),
    )


def _batch_size(signature: tuple[Leaf, ...]) -> int | None:
    sizes = {leaf.shape[0] for leaf in signature if leaf.kind == TENSOR and leaf.shape}
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    return size if isinstance(size, int) else None


def _same_but_batch(full: tuple[Leaf, ...], other: tuple[Leaf, ...], batch: int | None) -> bool:
    if len(full) != len(other):
        return False
    for a, b in zip(full, other):
        if a.path != b.path or a.kind != b.kind:
            return False
        if a.kind == TENSOR and a.shape and b.shape and len(a.shape) == len(b.shape):
            if a.dtype != b.dtype or a.shape[1:] != b.shape[1:]:
                return False
            if batch is not None and not (isinstance(b.shape[0], int) and b.shape[0] < batch):
                return False
        elif a != b:
            return False
    return True


def _loop_dataset(ctx: FunctionContext, site: str | None) -> str | None:
    """The name of what the innermost loop binding this call's arguments iterates over.

    ``for step, (x, y) in enumerate(train_dataset): f(x, y)`` gives ``train_dataset``; ``iter()``
    and ``enumerate()`` are looked through, anything else (zip, a method call) gives None.
    """
    info = ctx.call_info(site)
    parsed = ctx.reader.module(info.path) if info is not None else None
    if info is None or parsed is None:
        return None
    passed = {arg[1] for arg in info.args}
    best: tuple[int, str] | None = None
    for node in ast.walk(parsed[1]):
        if not (isinstance(node, ast.For) and spans_line(node, info.line)):
            continue
        if not passed & {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}:
            continue
        source = node.iter
        while (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Name)
            and source.func.id in ("iter", "enumerate")
            and source.args
        ):
            source = source.args[0]
        if isinstance(source, ast.Name) and (best is None or node.lineno > best[0]):
            best = (node.lineno, source.id)  # the innermost such loop starts last
    return best[1] if best is not None else None


def batch_insertion(anchors: Anchors, edit: Replacement) -> str | None:
    """``, drop_remainder=True`` inserted before the closing parenthesis of a ``.batch(...)`` call."""
    span = edit.span
    if (span.line, span.col) != (span.end_line, span.end_col):
        return "not an insertion"
    ends = {
        (b.span.end_line, b.span.end_col - 1) for b in anchors.reader.batch_calls(span.path) if not b.has_drop_remainder
    }
    if (span.line, span.col) not in ends:
        return "not at the closing parenthesis of a .batch() call without drop_remainder"
    if edit.text.strip().lstrip(",").strip().replace(" ", "") != "drop_remainder=True":
        return "the new text is not drop_remainder=True"
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety("the partial last batch is skipped: its examples are not computed", "one batch shape"),
    check=batch_insertion,
    row=Row(
        "unsafe",
        "the partial last batch is skipped",
    ),
    changes=CHANGES_EXAMPLES,
    drops_data=True,
    position=160,
    makers=(Maker(drop_remainder, 80),),
)
