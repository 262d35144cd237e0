"""What the call-site kinds share (cast-dtype, zero-state, tensor-argument): previews, reached calls, a note."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.candidate import FunctionContext
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.source import Replacement
from tfretrace.records.events import Leaf


def swap_leaf(signature: tuple[Leaf, ...], path: str, leaf: Leaf) -> tuple[Leaf, ...]:
    return tuple(replace(leaf, path=path) if x.path == path else x for x in signature)


def preview(ctx: FunctionContext, body: tuple[Replacement, ...], edits: tuple[Replacement, ...]) -> str | None:
    # The body's lines and the call sites' apart: one preview would show every line between them.
    parts = [ctx.reader.preview(group) for group in (body, edits) if group]
    return "\n".join(p for p in parts if p) or None


def reached(new: dict[int, Call], calls: tuple[Call, ...], missing: list[str]) -> dict[int, Call | None]:
    """The changed calls the edits reach: a call at a site left to be edited by hand keeps its arguments."""
    at = {c.index: c.site for c in calls}
    return {index: call for index, call in new.items() if at.get(index) not in missing}


def missing_note(missing: list[str]) -> str:
    return "" if not missing else f" (no mechanical edit at {', '.join(missing)}: edit by hand)"
