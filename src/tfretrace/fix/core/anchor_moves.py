"""What the move kinds' anchor checks share: a move's edits derived again from the file, a moved def or line judged.

A move (a def to module level, a statement out of its loop, a vectorized_map wrapper) is never
judged from the session's text alone: the edits tfretrace would make are derived again from the
file as it is now, and a session's edit must be one of them, text and place exactly. Its step must
carry the whole move: a statement removed is written again elsewhere, and lines added are used.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from tfretrace.fix.core.anchor_base import Anchors, Check
from tfretrace.fix.core.hoist import def_moved, hoist_edits, wrap_moved
from tfretrace.fix.core.source import Replacement, is_user_path

# The moves a step may make: each yields every edit group tfretrace makes for this function now.
Derive = Callable[[Anchors, Replacement], Iterator[tuple[Replacement, ...]]]


def is_move(edit: Replacement) -> bool:
    """An edit that removes a statement (no text) or adds statements (whole lines at an empty span)."""
    span = edit.span
    empty = (span.line, span.col) == (span.end_line, span.end_col)
    return not edit.text or (empty and edit.text.endswith("\n"))


def recorded_sites(anchors: Anchors, edit: Replacement) -> Iterator[str]:
    # TensorFlow's own function (a map function, pfor) built at a call site in this file.
    for site in dict.fromkeys(e.call_site for e in anchors.report.events if e.call_site):
        path = site.rpartition(":")[0]
        if path == edit.span.path and is_user_path(path):
            yield site


def move(derive: Derive, what: str) -> Check:
    """An edit that is exactly one of the edits tfretrace derives for this move from the file now."""

    def check(anchors: Anchors, edit: Replacement) -> str | None:
        if any(edit in group for group in derive(anchors, edit)):
            return None
        return f"not {what} as tfretrace writes it from the file as it is now"

    return check


def moved_wrap(anchors: Anchors, edit: Replacement, judge: Callable[[str], str | None]) -> str | None:
    """The ``f = tf.function(g)`` line moved before its loop: its removal, or its copy declared as ``judge`` accepts."""
    definition = anchors.definition
    plain = None if definition is None else wrap_moved(anchors.reader, definition)
    if plain is None or definition is None:
        return "not a tf.function(...) line tfretrace moves before its loop"
    removal, insertion = plain
    if edit == removal:
        return None
    if edit.span != insertion.span:
        return "not the tf.function(...) line moved before its loop"
    try:
        tree = ast.parse(edit.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "the new text is not the moved line"
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for call in calls[:1]:  # the assigned value: the outermost call of the line
        text = ast.get_source_segment(edit.text, call)
        if text is None or judge(text) is not None:
            continue
        again = wrap_moved(anchors.reader, definition, text)
        if again is not None and again[1] == edit:
            return None
    return "the new text is not the moved line with a tf.function declaration of this kind"


def moved_def(anchors: Anchors, edit: Replacement, judge: Callable[[str], str | None] | None) -> str | None:
    """The def moved to module level (its removal, or its copy whose decorator ``judge`` accepts)."""
    plain = def_moved(anchors.definition, anchors.reader)
    if plain is None:
        return "not a def tfretrace moves"
    removal, insertion = plain
    if hoist_edits(anchors.definition, anchors.reader) is None and not any(
        step.get("kind") == "hoist-def-outer" and _carries(step, removal) for step in anchors.report.plan
    ):
        # The move into the function around the outer def is safe only where TensorFlow said so of its own
        # step: a declaration may carry that move only beside it.
        return "the def moved into the function around its outer def without the hoist-def-outer step"
    if edit == removal:
        return None
    if edit.span != insertion.span or judge is None:
        return "not the def as tfretrace moves it"
    try:
        tree = ast.parse(edit.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "the new text is not a def"
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "the new text is not one def"
    for decorator in tree.body[0].decorator_list:
        text = ast.get_source_segment(edit.text, decorator)
        if text is None or judge(text) is not None:
            continue
        # The text must be the def exactly as the hoist moves it, with only this decorator new.
        again = def_moved(anchors.definition, anchors.reader, text)
        if again is not None and again[1] == edit:
            return None
    return "the new text is not the moved def with a tf.function declaration of this kind"


def _carries(step: dict[str, object], edit: Replacement) -> bool:
    # A saved step's edits (dicts, as the session holds them) include ``edit``.
    span = edit.span
    wanted = {"path": span.path, "line": span.line, "col": span.col, "end_line": span.end_line,
              "end_col": span.end_col, "text": edit.text}
    edits = step.get("edits")
    return isinstance(edits, list) and any(
        isinstance(e, dict) and all(e.get(k) == v for k, v in wanted.items()) for e in edits
    )


def any_of(*checks: Check) -> Check:
    """An edit that one of ``checks`` accepts (one step kind, several places: call sites and body)."""

    def check(anchors: Anchors, edit: Replacement) -> str | None:
        reasons = [c(anchors, edit) for c in checks]
        return None if any(r is None for r in reasons) else reasons[0]

    return check
