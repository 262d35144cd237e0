"""What the planner reads from a body's source: sizes read as Python numbers, Python effects at trace time."""

from __future__ import annotations

import ast

import pytest

from tfretrace.fix.core.body import reads_static_size, trace_time_effect

BODY = """\
def call(self, x, y):
    if not self.built:
        self.w = tf.Variable(tf.ones([x.shape[-1], 1]))
    return tf.matmul(x, self.w) / len(y)
"""


@pytest.mark.parametrize(
    ("param", "kwargs", "reads"),
    [
        # x.shape[-1] of a rank-2 tensor is its dimension 1: a signature opening dimension 0 keeps it.
        ("x", {"leading_only": True, "rank": 2}, False),
        ("x", {"rank": 2, "dims": {0}}, False),
        ("x", {"rank": 2, "dims": {1}}, True),
        # Of a rank-1 tensor, the same text reads the leading dimension.
        ("x", {"leading_only": True, "rank": 1}, True),
        # The rank unknown: -1 may be any dimension, and counts.
        ("x", {"leading_only": True}, True),
        ("x", {}, True),
        # len(y) reads dimension 0 only.
        ("y", {"rank": 3, "dims": {1, 2}}, False),
        ("y", {"rank": 3, "dims": {0}}, True),
    ],
)
def test_size_reads(param: str, kwargs: dict[str, object], reads: bool) -> None:
    assert reads_static_size(ast.parse(BODY), param, **kwargs) is reads  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "effect"),
    [
        ("def f(x):\n    print(x)\n    return x\n", "print(...)"),
        ("def f(x):\n    log.append(x)\n    return x\n", "log.append(...)"),
        # tf.add is a value the body uses, not a container of the program's it fills.
        ("def f(x):\n    return tf.add(x, x)\n", None),
        ("def f(x):\n    y = tf.add(x, 1)\n    seen = []\n    seen.append(y)\n    return y\n", None),
    ],
)
def test_trace_time_effects(body: str, effect: str | None) -> None:
    node = ast.parse(body).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert trace_time_effect(node) == effect
