"""The tf.function declaration edit and its anchor check, shared by input-signature, element-spec, reduce-retracing."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from tfretrace.fix.core.anchor_base import Anchors, Check, dotted_name, expression, is_literal
from tfretrace.fix.core.anchor_moves import is_move, moved_def, moved_wrap
from tfretrace.fix.core.candidate import FunctionContext, State
from tfretrace.fix.core.files import lines as source_lines
from tfretrace.fix.core.hoist import def_moved, wrap_moved
from tfretrace.fix.core.source import Replacement, Span


def decorator_edit(
    ctx: FunctionContext, keyword: str, state: State | None = None
) -> tuple[str, tuple[Replacement, ...]]:
    """The tf.function declaration with one more keyword argument: its new text and the edit.

    After a hoist step (``state.moved``) the edits are the hoist's, the moved def carrying the new
    decorator: the step replaces the hoist's edits instead of editing the def it removes.
    """
    definition = ctx.definition
    tf = ctx.tf
    if definition is not None and definition.tf_alias is None and "TensorSpec" in keyword:
        # The def's file has no `import tensorflow as ...`: tf.TensorSpec would not resolve there.
        return f"@{tf}.function({keyword})", ()
    if definition is not None and definition.decorator is not None and definition.decorator_text is not None:
        new = _add_keyword(definition.decorator_text, keyword)
        moved = def_moved(definition, ctx.reader, new) if state is not None and state.moved else None
        if moved is not None:
            return "@" + new, moved
        return "@" + new, (Replacement(definition.decorator, _indented(ctx, definition.decorator, new)),)
    if definition is not None and definition.wrap_call is not None and definition.wrap_text is not None:
        new = _add_keyword(definition.wrap_text, keyword)
        if state is not None and state.moved:
            # After hoist-wrap the declaration goes into the moved line; where it cannot be
            # written there, editing the removed line would undo the move: no edit, by hand.
            once = wrap_moved(ctx.reader, definition, new)
            return new, once if once is not None else ()
        return new, (Replacement(definition.wrap_call, _indented(ctx, definition.wrap_call, new)),)
    return f"@{tf}.function({keyword})\ndef {ctx.short}(...):\n    ...", ()


def _indented(ctx: FunctionContext, span: Span, text: str) -> str:
    # Continuation lines of a multi-line replacement follow the indentation of the line they start on.
    parsed = ctx.reader.module(span.path)
    if parsed is None or "\n" not in text:
        return text
    line = source_lines(parsed[0])[span.line - 1].rstrip("\r\n")
    indent = line[: len(line) - len(line.lstrip())]
    return text.replace("\n", "\n" + indent)


def _add_keyword(text: str, keyword: str) -> str:
    name = keyword.split("=", 1)[0]
    stripped = text.rstrip()
    if not stripped.endswith(")"):
        return f"{stripped}({keyword})"
    # Replace the keyword when present (reduce_retracing=False -> True), else add it last.
    pattern = re.compile(rf"\b{re.escape(name)}\s*=\s*(\[[^\]]*\]|[^,)]*)")
    if pattern.search(stripped):
        return pattern.sub(lambda _: keyword, stripped, count=1)
    inner = stripped[stripped.index("(") + 1 : -1].strip()
    if not inner:
        return f"{stripped[:-1]}{keyword})"
    return f"{stripped[:-1].rstrip().rstrip(',')}, {keyword})"


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
        return isinstance(node.value, ast.Name)  # the dataset's name, as fix.kinds.element_spec writes it
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
