"""What every anchor check reads: a function's def and call names in the file as it is now, and its text helpers."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.source import DefInfo, Replacement, SourceReader, Span, literal_elements
from tfretrace.records.function_report import FunctionReport


class AnchorError(ValueError):
    """An edit that is not at an anchor of its step's kind, or whose text is not of that kind: one line."""


@dataclass(frozen=True)
class Anchors:
    """What one function's edits may touch: its def and the names it is called by, read from source."""

    report: FunctionReport
    reader: SourceReader
    definition: DefInfo | None
    names: tuple[str, ...]

    def tree(self, path: str) -> ast.Module | None:
        """The parsed file an edit is in, or None when it cannot be read."""
        parsed = self.reader.module(path)
        return None if parsed is None else parsed[1]

    def alias(self, path: str) -> str | None:
        """That file's name for the tensorflow module."""
        return self.reader.tf_alias(path)

    def call_arguments(self, path: str) -> Iterator[ast.expr]:
        """Every argument expression passed in a call of this function in one file, and each element of
        one written as a literal tuple, list or dict (a number the call passes inside it)."""
        tree = self.tree(path)
        if tree is None:
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and callee_name(node.func) in self.names:
                passed = [*(a for a in node.args if not isinstance(a, ast.Starred)),
                          *(k.value for k in node.keywords if k.arg is not None)]
                for arg in passed:
                    yield arg
                    yield from (value for _key, value in literal_elements(arg))


Check = Callable[[Anchors, Replacement], "str | None"]


def span_of(node: ast.expr, path: str) -> Span:
    return Span(path, node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)


def expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def dotted_name(node: ast.expr) -> list[str] | None:
    """``["tf", "dtypes", "float32"]`` for ``tf.dtypes.float32``; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def is_dtype(node: ast.expr, alias: str | None) -> bool:
    """``tf.float32`` or ``tf.dtypes.int64``: a dtype of the file's tensorflow module, read, never called.

    The file must import tensorflow: without it ``tf`` is whatever the program bound to that name.
    """
    dotted = dotted_name(node)
    if alias is None or dotted is None or dotted[0] != alias or len(dotted) not in (2, 3):
        return False
    if len(dotted) == 3 and dotted[1] != "dtypes":
        return False
    return _DTYPE_NAME.match(dotted[-1]) is not None


# TensorFlow's dtype names (``float32``, ``bfloat16``, ``float8_e4m3fn``): lower case, no dunder.
_DTYPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def is_literal(node: ast.expr, alias: str | None) -> bool:
    """A constant, a list/tuple of constants (a shape), or a dtype such as ``tf.float32``."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(is_literal(e, alias) for e in node.elts)
    return is_dtype(node, alias)


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
