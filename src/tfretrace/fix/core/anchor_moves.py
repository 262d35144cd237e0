"""Anchors of the edits that move or add statements, rewrite a body's call, or replace Keras predict.

A move (a def to module level, a statement out of its loop, a vectorized_map wrapper) is never
judged from the session's text alone: the edits tfretrace would make are derived again from the
file as it is now, and a session's edit must be one of them, text and place exactly. Its step must
carry the whole move: a statement removed is written again elsewhere, and lines added are used.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from tfretrace.fix.core.anchor_base import Anchors, Check, dotted_name, expression, span_of
from tfretrace.fix.core.factory import factory_edits
from tfretrace.fix.core.hoist import (
    hoist_edits,
    object_edits,
    pipeline_edits,
    vectorized_edits,
    wrap_moved,
)
from tfretrace.fix.core.source import Replacement, is_user_path

# The moves a step may make: each yields every edit group tfretrace makes for this function now.
Derive = Callable[[Anchors, Replacement], Iterator[tuple[Replacement, ...]]]


def is_move(edit: Replacement) -> bool:
    """An edit that removes a statement (no text) or adds statements (whole lines at an empty span)."""
    span = edit.span
    empty = (span.line, span.col) == (span.end_line, span.end_col)
    return not edit.text or (empty and edit.text.endswith("\n"))


def _hoisted_def(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    moved = hoist_edits(anchors.definition, anchors.reader)
    if moved is not None:
        yield moved


def _wrap_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    # `tf_f = tf.function(f)` inside a loop: the function's own wrapping call, read from the file.
    moved = None if anchors.definition is None else wrap_moved(anchors.reader, anchors.definition)
    if moved is not None:
        yield moved


def _recorded_sites(anchors: Anchors, edit: Replacement) -> Iterator[str]:
    # TensorFlow's own function (a map function, pfor) built at a call site in this file.
    for site in dict.fromkeys(e.call_site for e in anchors.report.events if e.call_site):
        path = site.rpartition(":")[0]
        if path == edit.span.path and is_user_path(path):
            yield site


def _pipeline_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    for site in _recorded_sites(anchors, edit):
        moved = pipeline_edits(anchors.reader, site)
        if moved is not None:
            yield moved


def _vectorized_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    for site in _recorded_sites(anchors, edit):
        wrapped = vectorized_edits(anchors.reader, site)
        if wrapped is not None:
            yield wrapped[1]


def _factory_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    # `f = make_f(...)` in the loop around a recorded call of f, for a factory that only makes the def.
    for site in _recorded_sites(anchors, edit):
        made = factory_edits(anchors.reader, anchors.definition, site)
        if made is not None:
            yield made[1]


def _object_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    # A plain name passed to a call of the function, made in the loop around that call.
    tree = anchors.tree(edit.span.path)
    if tree is None:
        return
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _calls(node, anchors.names)):
            continue
        for value in (*node.args, *(k.value for k in node.keywords)):
            if isinstance(value, ast.Name):
                moved = object_edits(anchors.reader, f"{edit.span.path}:{node.lineno}", value.id)
                if moved is not None:
                    yield moved


def _calls(node: ast.Call, names: tuple[str, ...]) -> bool:
    func = node.func
    return (isinstance(func, ast.Name) and func.id in names) or (
        isinstance(func, ast.Attribute) and func.attr in names
    )


MOVES: dict[str, Derive] = {
    "hoist-def": _hoisted_def,
    "hoist-wrap": _wrap_once,
    "hoist-pipeline": _pipeline_once,
    "wrap-vectorized-map": _vectorized_once,
    "hoist-object": _object_once,
    "hoist-factory-call": _factory_once,
}


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
    plain = hoist_edits(anchors.definition, anchors.reader)
    if plain is None:
        return "not a def tfretrace moves to module level"
    removal, insertion = plain
    if edit == removal:
        return None
    if edit.span != insertion.span or judge is None:
        return "not the def moved to module level"
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
        again = hoist_edits(anchors.definition, anchors.reader, text)
        if again is not None and again[1] == edit:
            return None
    return "the new text is not the moved def with a tf.function declaration of this kind"


def missing_part(kind: str, anchors: Anchors, edits: tuple[Replacement, ...]) -> str | None:
    """The first place of a move the step leaves out (a removed def not written again), or None."""
    derive = MOVES.get(kind)
    if derive is None:
        # A declaration step after a hoist: the same two places (a def's, or a tf.function line's).
        wrapped = anchors.definition is not None and anchors.definition.decorator is None
        derive = _wrap_once if wrapped else _hoisted_def
    spans = {e.span for e in edits}
    for edit in edits:
        if kind not in MOVES and not is_move(edit):
            continue
        groups = [g for g in derive(anchors, edit) if any(e.span == edit.span for e in g)]
        if groups and not any(all(e.span in spans for e in g) for g in groups):
            return f"{edit.span.path}:{edit.span.line}: {kind} edit refused: only part of a move"
    return None


def body_constant(anchors: Anchors, edit: Replacement) -> str | None:
    """``tf.constant(<param>...)`` in the function's body -> ``tf.convert_to_tensor`` of the same arguments."""
    definition = anchors.definition
    if definition is None or definition.node is None or definition.path != edit.span.path:
        return "not in the function's body"
    alias = definition.tf_alias
    if alias is None:
        return "the file does not import tensorflow"  # `tf` there is the program's own name
    found = next((
        n for n in ast.walk(definition.node)
        if isinstance(n, ast.Call) and span_of(n, edit.span.path) == edit.span
        and dotted_name(n.func) == [alias, "constant"]
        and any(isinstance(x, ast.Name) and x.id in definition.params for a in n.args for x in ast.walk(a))
    ), None)
    if found is None:
        return "not a tf.constant of a parameter in the function's body"
    new = expression(edit.text)
    if (
        not isinstance(new, ast.Call)
        or dotted_name(new.func) != [alias, "convert_to_tensor"]
        or [ast.dump(a) for a in new.args] != [ast.dump(a) for a in found.args]
        or [ast.dump(k) for k in new.keywords] != [ast.dump(k) for k in found.keywords]
    ):
        return "the new text is not tf.convert_to_tensor of the same arguments"
    return None


def body_sum(anchors: Anchors, edit: Replacement) -> str | None:
    """``tf.add_n(<param>)`` in the function's body -> ``tf.reduce_sum(<param>, axis=0)``."""
    definition = anchors.definition
    if definition is None or definition.node is None or definition.path != edit.span.path:
        return "not in the function's body"
    alias = definition.tf_alias
    if alias is None:
        return "the file does not import tensorflow"
    found = next((
        n for n in ast.walk(definition.node)
        if isinstance(n, ast.Call) and span_of(n, edit.span.path) == edit.span
        and dotted_name(n.func) == [alias, "add_n"] and len(n.args) == 1 and not n.keywords
        and isinstance(n.args[0], ast.Name) and n.args[0].id in definition.params
    ), None)
    if found is None:
        return "not a tf.add_n of a parameter in the function's body"
    wanted = ast.parse(f"{alias}.reduce_sum({ast.unparse(found.args[0])}, axis=0)", mode="eval").body
    new = expression(edit.text)
    if new is None or ast.dump(new) != ast.dump(wanted):
        return "the new text is not tf.reduce_sum of the same list along axis 0"
    return None


_LOOP_KEYWORDS = frozenset({"verbose", "batch_size"})


def keras_call(anchors: Anchors, edit: Replacement) -> str | None:
    """``model.predict(x)`` -> ``model(x, training=False).numpy()``, receiver and argument unchanged."""
    keras = anchors.report.keras
    if keras is None or keras.method != "predict":
        return "not a Keras predict function"
    tree = anchors.tree(edit.span.path)
    # A call of predict at one of the recorded call sites, as the planner edits them.
    numbers = (site.rpartition(":")[2] for site in _recorded_sites(anchors, edit))
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


def any_of(*checks: Check) -> Check:
    """An edit that one of ``checks`` accepts (one step kind, several places: call sites and body)."""

    def check(anchors: Anchors, edit: Replacement) -> str | None:
        reasons = [c(anchors, edit) for c in checks]
        return None if any(r is None for r in reasons) else reasons[0]

    return check

