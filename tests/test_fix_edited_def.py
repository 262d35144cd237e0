"""The def as body edits leave it (FunctionContext.edited), without TensorFlow: the text the probe compiles."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, cast

from tfretrace.fix.core.anchor_base import span_of
from tfretrace.fix.core.candidate import FunctionContext
from tfretrace.fix.core.source import Replacement, SourceReader

PROGRAM = """\
import tensorflow as tf


@tf.function
def f(x, n):
    label = "é"  # a non-ASCII character before the edit: ast columns are UTF-8 bytes
    return tf.add_n(x) * tf.cast(tf.constant(n), tf.float32), label


print(f([tf.constant(1.0)], 2))
"""


def _context(tmp_path: Path) -> FunctionContext:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    reader = SourceReader(tmp_path)
    definition = reader.function_at("prog.py:4", "f")
    assert definition is not None and definition.node is not None
    return FunctionContext(cast(Any, None), reader, definition, "f")


def _call(ctx: FunctionContext, name: str) -> ast.Call:
    assert ctx.definition is not None and ctx.definition.node is not None
    return next(n for n in ast.walk(ctx.definition.node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == name)


def test_the_body_edits_are_made_in_the_def_and_nothing_else_changes(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    body = (
        Replacement(span_of(_call(ctx, "add_n"), "prog.py"), "tf.reduce_sum(x, axis=0)"),
        Replacement(span_of(_call(ctx, "constant"), "prog.py"), "tf.convert_to_tensor(n)"),
    )
    made = ctx.edited(body)
    assert made is not None
    text, line = made
    assert line == 5  # the def's own line, the decorator above it
    expected = PROGRAM.replace("tf.add_n(x)", "tf.reduce_sum(x, axis=0)").replace(
        "tf.constant(n)", "tf.convert_to_tensor(n)")
    assert text == expected
    assert (tmp_path / "prog.py").read_text(encoding="utf-8") == PROGRAM  # nothing written


def test_an_edit_outside_the_def_or_overlapping_another_is_not_made(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    tree = ast.parse(PROGRAM)
    outside = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print")
    assert ctx.edited((Replacement(span_of(outside, "prog.py"), "print(0)"),)) is None
    add_n = _call(ctx, "add_n")
    whole = Replacement(span_of(add_n, "prog.py"), "tf.reduce_sum(x, axis=0)")
    inner = Replacement(span_of(add_n.args[0], "prog.py"), "y")
    assert ctx.edited((whole, inner)) is None
