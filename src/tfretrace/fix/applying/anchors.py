"""Where a saved session's edits may land and what they may say: one check per plan step kind.

A session is data from elsewhere (a colleague, a CI artifact, an issue): its plan's edits are
replayed only when each sits at an anchor that its step's kind edits (the function's tf.function
decorator or wrapping call, an argument of a call of that function, a ``.batch()`` call, an initial
``None``, a ``tf.constant`` or ``tf.add_n`` of a parameter in the body, a ``.predict`` call) and its
text is what that kind writes there (a tf.function declaration with a signature, the argument itself
wrapped in a tensor conversion, ...). Moves (hoists, the vectorized_map wrapper) are derived again
from the file and must match exactly (fix.anchor_moves). Anchors are found in the file as it is
now, never taken from the session. A kind not in :data:`CHECKS` makes no edit.

To add an edit kind: write a ``Check`` (it returns None to accept an edit, or one line saying why
not) and add it to :data:`CHECKS` under the step's ``kind``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from tfretrace.fix.core.anchor_base import (
    AnchorError,
    Anchors,
    Check,
    dotted_name,
    expression,
    is_dtype,
    is_literal,
    span_of,
)
from tfretrace.fix.core.anchor_moves import (
    MOVES,
    any_of,
    body_constant,
    body_sum,
    is_move,
    keras_call,
    missing_part,
    move,
    moved_def,
    moved_wrap,
)
from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.source import Replacement, SourceReader, Span
from tfretrace.fix.kinds import keras_pad_rows
from tfretrace.fix.kinds.neutral_key import neutral_key_dict
from tfretrace.records.function_report import FunctionReport

__all__ = ["CHECKS", "AnchorError", "Anchors", "anchors_for", "check_edit", "check_step", "declaration"]

# The only calls an input_signature edit may make: TensorFlow's spec constructors, of literals.
_SPECS = {"TensorSpec", "RaggedTensorSpec", "SparseTensorSpec"}


def _is_spec(node: ast.expr, alias: str | None) -> bool:
    """One input_signature entry: a TensorSpec of literals, a structure of them, or an element_spec.

    Nothing else is called: a session is data from elsewhere, and an entry such as ``publish()``
    or ``Point(x=...)`` would run the program's own code when the edited file is imported.
    """
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_spec(e, alias) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(isinstance(k, ast.Constant) for k in node.keys) and all(_is_spec(v, alias) for v in node.values)
    if isinstance(node, ast.Attribute) and node.attr == "element_spec":
        return isinstance(node.value, ast.Name)  # the dataset's name, as fix.declare writes it
    if not isinstance(node, ast.Call) or alias is None:
        return False
    dotted = dotted_name(node.func)
    if dotted is None or len(dotted) != 2 or dotted[0] != alias or dotted[1] not in _SPECS:
        return False
    if any(k.arg is None for k in node.keywords):
        return False
    return all(is_literal(v, alias) for v in [*node.args, *(k.value for k in node.keywords)])


def _signature(node: ast.expr, alias: str | None) -> bool:
    return isinstance(node, (ast.List, ast.Tuple)) and all(_is_spec(e, alias) for e in node.elts)


def _true(node: ast.expr, alias: str | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


# Keywords a declaration edit may add to tf.function, and the values each may take.
DECLARATION_KEYWORDS: dict[str, Callable[[ast.expr, str | None], bool]] = {
    "input_signature": _signature,
    "reduce_retracing": _true,
}


def declaration(keyword: str) -> Check:
    """The function's tf.function decorator or wrapping call, made with ``keyword`` added or changed.

    After a hoist the step's edits are the hoist's (see :func:`anchor_moves.moved_def`), the moved
    def carrying the new decorator.
    """

    def check(anchors: Anchors, edit: Replacement) -> str | None:
        definition = anchors.definition
        alias = anchors.alias(edit.span.path)
        if is_move(edit):
            if definition is not None and definition.decorator is None and definition.wrap_text is not None:
                wrap = definition.wrap_text
                return moved_wrap(anchors, edit, lambda new: declared(wrap, new, keyword, alias))
            original = None if definition is None else definition.decorator_text
            if original is None:
                return "not a def tfretrace moves to module level"
            kept = original
            return moved_def(anchors, edit, lambda new: declared(kept, new, keyword, alias))
        places = [] if definition is None else [
            (definition.decorator, definition.decorator_text), (definition.wrap_call, definition.wrap_text)
        ]
        original = next((text for span, text in places if span is not None and span == edit.span), None)
        if original is None:
            return "not the function's tf.function decorator or wrapping call"
        return declared(original, edit.text, keyword, alias)

    return check


def declared(original: str, text: str, keyword: str, alias: str | None) -> str | None:
    """None when ``text`` is the declaration ``original`` with ``keyword`` set; else why not."""
    before, after = expression(original), expression(text)
    if before is None or not isinstance(after, ast.Call):
        return "the new text is not a tf.function declaration"
    callee = before.func if isinstance(before, ast.Call) else before
    old_args = before.args if isinstance(before, ast.Call) else []
    old_keywords = {k.arg: ast.dump(k.value) for k in before.keywords} if isinstance(before, ast.Call) else {}
    if ast.dump(after.func) != ast.dump(callee) or [ast.dump(a) for a in after.args] != [
        ast.dump(a) for a in old_args
    ]:
        return "the new text declares something else than the function's tf.function"
    added = False
    for item in after.keywords:
        if item.arg is not None and old_keywords.get(item.arg) == ast.dump(item.value):
            continue  # kept as the user wrote it
        allowed = DECLARATION_KEYWORDS.get(item.arg or "")
        if allowed is None or not allowed(item.value, alias):
            return f"the new text sets {item.arg or '**'} to something a {keyword} edit does not write"
        added = added or item.arg == keyword
    return None if added else f"the new text does not set {keyword}"


def call_argument(*conversions: str) -> Check:
    """An argument of a call of the function, wrapped in ``tf.<conversion>(argument, dtype)``."""

    def check(anchors: Anchors, edit: Replacement) -> str | None:
        found = next((a for a in anchors.call_arguments(edit.span.path) if span_of(a, edit.span.path) == edit.span),
                     None)
        if found is None:
            return f"not an argument of a call of {anchors.names[-1]}"
        alias = anchors.alias(edit.span.path)
        new = expression(edit.text)
        dotted = None if not isinstance(new, ast.Call) else dotted_name(new.func)
        if not isinstance(new, ast.Call) or dotted is None or dotted[1:] != [dotted[-1]] or dotted[0] != alias:
            return "the new text is not a tensor conversion of the argument"
        if dotted[-1] not in conversions or not new.args or ast.dump(new.args[0]) != ast.dump(found):
            return "the new text is not a tensor conversion of the argument"
        extra = [*new.args[1:], *(k.value for k in new.keywords)]
        if any(k.arg != "dtype" for k in new.keywords) or not all(is_dtype(v, alias) for v in extra):
            return "the new text passes more than a dtype to the conversion"
        return None

    return check


def zero_state(anchors: Anchors, edit: Replacement) -> str | None:
    """A ``None`` passed to the function, or assigned before the call, becomes ``tf.zeros(shape, dtype)``."""
    path = edit.span.path
    nones = [a for a in anchors.call_arguments(path) if isinstance(a, ast.Constant) and a.value is None]
    tree = anchors.tree(path)
    if tree is not None:
        nones.extend(
            n.value for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None
        )
    if not any(span_of(n, path) == edit.span for n in nones):
        return "not a None passed to the function or assigned before its call"
    alias = anchors.alias(path)
    new = expression(edit.text)
    if (
        alias is None  # no tensorflow import: `tf` there is the program's own name
        or not isinstance(new, ast.Call)
        or dotted_name(new.func) != [alias, "zeros"]
        or any(k.arg is None for k in new.keywords)
        or not all(is_literal(v, alias) for v in [*new.args, *(k.value for k in new.keywords)])
    ):
        return "the new text is not a zero tensor of a literal shape"
    return None


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


# The edit kinds tfretrace makes, each with where its edits may land and what they may say.
CHECKS: dict[str, Check] = {
    "input-signature": declaration("input_signature"),
    "element-spec": declaration("input_signature"),
    "reduce-retracing": declaration("reduce_retracing"),
    # At the call sites, and in the body: tf.constant(param) -> tf.convert_to_tensor, tf.add_n -> reduce_sum.
    "tensor-argument": any_of(call_argument("constant", "convert_to_tensor", "stack"), body_constant, body_sum),
    "cast-dtype": call_argument("cast"),
    "zero-state": zero_state,
    "drop-remainder": batch_insertion,
    "keras-call": keras_call,
    keras_pad_rows.KIND: keras_pad_rows.check_edit,
    "neutral-key": neutral_key_dict,
    "hoist-def": move(MOVES["hoist-def"], "the def moved to module level"),
    "hoist-wrap": move(MOVES["hoist-wrap"], "the tf.function(...) made once before its loop"),
    "hoist-pipeline": move(MOVES["hoist-pipeline"], "the pipeline built once before its loop"),
    "hoist-object": move(MOVES["hoist-object"], "the object made once before its loop"),
    "hoist-factory-call": move(MOVES["hoist-factory-call"], "the factory called once before its loop"),
    "wrap-vectorized-map": move(MOVES["wrap-vectorized-map"], "the vectorized_map wrapper and its call"),
}


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
    if kind == keras_pad_rows.KIND:  # its new lines are the helper, not a move
        reason = keras_pad_rows.missing_helper(anchors, tuple(edits))
    else:
        reason = missing_part(kind, anchors, tuple(edits))
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
