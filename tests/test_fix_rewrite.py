"""The libcst rewriter: before-file -> after-file, layout and comments kept, inexact edits refused."""

from __future__ import annotations

import ast

import pytest

from tfretrace.fix.applying.rewrite import RewriteError, apply_replacements
from tfretrace.fix.core.source import Replacement, Span

BEFORE = '''import tensorflow as tf  # the alias

@tf.function   # the step
def step(x, lr):
    return x * lr  # body stays

ds = ds.batch(32)  # batches
ds2 = ds.batch(32,)
ds3 = ds.batch()
out = step(x, lr)   # call
'''

AFTER = '''import tensorflow as tf  # the alias

@tf.function(input_signature=[
    tf.TensorSpec(shape=[None], dtype=tf.float32),
])   # the step
def step(x, lr):
    return x * lr  # body stays

ds = ds.batch(32, drop_remainder=True)  # batches
ds2 = ds.batch(32, drop_remainder=True)
ds3 = ds.batch(drop_remainder=True)
out = step(x, tf.constant(lr, dtype=tf.float32))   # call
'''


def edit(line: int, col: int, end_line: int, end_col: int, text: str) -> Replacement:
    return Replacement(Span("a.py", line, col, end_line, end_col), text)


def test_every_edit_kind_lands_and_the_rest_is_byte_identical() -> None:
    edits = [
        edit(3, 1, 3, 12, "tf.function(input_signature=[\n    tf.TensorSpec(shape=[None], dtype=tf.float32),\n])"),
        edit(7, 16, 7, 16, ", drop_remainder=True"),
        edit(8, 18, 8, 18, ", drop_remainder=True"),
        edit(9, 15, 9, 15, ", drop_remainder=True"),
        edit(10, 14, 10, 16, "tf.constant(lr, dtype=tf.float32)"),
    ]
    after = apply_replacements(BEFORE, edits)
    assert after == AFTER
    ast.parse(after)


def test_columns_are_the_byte_offsets_ast_gives() -> None:
    source = 's = "ééé"; out = step(x, lr)\n'
    node = ast.parse(source).body[1].value.args[1]  # type: ignore[attr-defined]
    after = apply_replacements(
        source, [edit(1, node.col_offset, 1, node.end_col_offset, "tf.constant(lr)")]
    )
    assert after == 's = "ééé"; out = step(x, tf.constant(lr))\n'


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ([edit(10, 13, 10, 16, "x")], "not what the session recorded"),  # not one whole expression
        ([edit(40, 0, 40, 1, "x")], "outside the file"),
        ([edit(10, 14, 10, 16, "tf.constant(")], "not a Python expression"),
        ([edit(10, 6, 10, 17, "a"), edit(10, 14, 10, 16, "b")], "overlap"),
        ([edit(7, 10, 7, 10, ", drop_remainder=True")], "not what the session recorded"),  # not before a ')'
    ],
)
def test_inexact_edits_are_refused(edits: list[Replacement], message: str) -> None:
    with pytest.raises(RewriteError, match=message):
        apply_replacements(BEFORE, edits)


def test_no_edits_returns_the_text_itself() -> None:
    assert apply_replacements(BEFORE, []) is BEFORE


NESTED = '''import tensorflow as tf


def run_epoch(data):
    @tf.function
    def score(x):
        return x

    total = 0.0
    return total


def later(data):
    y = 1
    @tf.function
    def g(x):
        return x

    return y


def commented(data):
    @tf.function
    def h(x):
        return x

    # why the total starts at zero
    total = 0.0
    return total
'''


@pytest.mark.parametrize(("line", "end", "first", "after"), [
    (6, 7, "def run_epoch(data):\n", "    total = 0.0\n"),  # the first statement: its blank line goes too
    (16, 17, "    y = 1\n", "\n"),  # not the first: the layout between statements stays
    (24, 25, "def commented(data):\n", "    # why the total starts at zero\n"),  # a comment stays
])
def test_removing_a_def_leaves_no_blank_line_opening_the_body(line: int, end: int, first: str, after: str) -> None:
    after_text = apply_replacements(NESTED, [edit(line, 4, end, 16, "")])
    lines = after_text.splitlines(keepends=True)
    assert lines[lines.index(first) + 1] == after
    ast.parse(after_text)
