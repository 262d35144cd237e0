"""Where a saved session's edits may land and what they may say: each step checked by its kind's anchor check.

A session is data from elsewhere (a colleague, a CI artifact, an issue): its plan's edits are
replayed only when each sits at an anchor that its step's kind edits (the function's tf.function
decorator or wrapping call, an argument of a call of that function, a ``.batch()`` call, an initial
``None``, a ``tf.constant`` or ``tf.add_n`` of a parameter in the body, a ``.predict`` call) and its
text is what that kind writes there (a tf.function declaration with a signature, the argument itself
wrapped in a tensor conversion, ...). Moves (hoists, the vectorized_map wrapper) are derived again
from the file and must match exactly (fix.core.anchor_moves). Anchors are found in the file as it
is now, never taken from the session. A kind not in ``fix.kinds.CHECKS`` makes no edit.

Each kind's check is its module's (fix.kinds.<kind>, ``KIND.check``); to add an edit kind, see
fix.kinds. This module only dispatches a step's edits to them.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tfretrace.fix.core.anchor_base import AnchorError, Anchors, span_of
from tfretrace.fix.core.anchor_moves import is_move
from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.source import Replacement, SourceReader, Span
from tfretrace.fix.kinds import CHECKS, MOVES, WHOLE
from tfretrace.records.function_report import FunctionReport

__all__ = ["AnchorError", "Anchors", "anchors_for", "check_edit", "check_step"]


def anchors_for(report: FunctionReport, reader: SourceReader) -> Anchors:
    """The anchors of one recorded function, read from its source as it is now."""
    short = report.name.rsplit(".", 1)[-1]
    definition = reader.function_at(report.location, short) if report.keras is None else None
    names = {short, definition.name if definition is not None else short}
    if definition is not None and definition.wrap_call is not None:
        names.update(_bound_to(reader, definition.wrap_call))
    return Anchors(report, reader, definition, tuple(sorted(names)))


def _bound_to(reader: SourceReader, wrap: Span) -> set[str]:
    """The names a ``tf_f = tf.function(f)`` (or ``self.step = ...``) binds: what the call sites call."""
    parsed = reader.module(wrap.path)
    if parsed is None:
        return set()
    found: set[str] = set()
    for node in ast.walk(parsed[1]):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if span_of(node.value, wrap.path) != wrap:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(name for t in targets if (name := callee_name(t)) is not None)
    return found


def check_step(kind: str, anchors: Anchors, edits: Sequence[Replacement]) -> None:
    """AnchorError unless every edit is at an anchor of ``kind`` and every move is made whole."""
    for edit in edits:
        check_edit(kind, anchors, edit)
    whole = WHOLE.get(kind)  # keras-pad-rows: its new lines are the helper, not a move
    reason = whole(anchors, tuple(edits)) if whole is not None else missing_part(kind, anchors, tuple(edits))
    if reason is not None:
        raise AnchorError(reason)


def check_edit(kind: str, anchors: Anchors, edit: Replacement) -> None:
    """AnchorError unless ``edit`` sits at an anchor of ``kind`` with text of that kind."""
    check = CHECKS.get(kind)
    where = f"{edit.span.path}:{edit.span.line}"
    if check is None:
        raise AnchorError(f"{where}: a step of kind {kind!r} makes no edit; not applied")
    reason = check(anchors, edit)
    if reason is not None:
        raise AnchorError(f"{where}: {kind} edit refused: {reason}")


def missing_part(kind: str, anchors: Anchors, edits: tuple[Replacement, ...]) -> str | None:
    """The first place of a move the step leaves out (a removed def not written again), or None."""
    derive = MOVES.get(kind)
    if derive is None:
        # A declaration step after a hoist: the same two places (a def's, or a tf.function line's).
        wrapped = anchors.definition is not None and anchors.definition.decorator is None
        derive = MOVES["hoist-wrap"] if wrapped else MOVES["hoist-def"]
    spans = {e.span for e in edits}
    for edit in edits:
        if kind not in MOVES and not is_move(edit):
            continue
        groups = [g for g in derive(anchors, edit) if any(e.span == edit.span for e in g)]
        if groups and not any(all(e.span in spans for e in g) for g in groups):
            return f"{edit.span.path}:{edit.span.line}: {kind} edit refused: only part of a move"
    return None
