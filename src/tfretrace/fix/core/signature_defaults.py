"""Parameters an input_signature leaves out: the trailing ones every recorded call left at their default.

TF 2.21 binds a parameter that an ``input_signature`` does not cover, but that has a default, as
that default: ``MLP.__call__(self, x, preds=False)`` under ``input_signature=[spec of x]`` has the
type ``(x: TensorSpec(...), preds: Literal[False] = <captured_default_value>)``. A call passing an
equal value (``preds=False``, ``0``) binds to the one trace; a call passing another (``preds=True``)
is refused (``Binding inputs to tf.function failed``). Measured on tensorflow/docs' Core APIs MLP
(tests/data/module_signature/mlp_core.py): 9 traces as written, 3 with ``[TensorSpec([None, 20])]``.

A spec covers parameters by position, so only a suffix of them can be left out. A Python flag
left out stays a Python value in the body (no ``if preds:`` becomes graph control flow), which is
why it is left out rather than made a ``tf.bool`` spec; the price is that the signature pins it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.rules import literal_key
from tfretrace.records.events import LITERAL_RULE, PYTHON, Leaf


def defaults_left_out(node: ast.AST | None, params: Sequence[str], calls: Sequence[Call]) -> dict[str, Leaf]:
    """The trailing parameters whose every recorded call bound their default, each with that value's leaf.

    ``params``: the parameters a spec would cover, in order (``self`` excluded). Empty when the
    def is not known or its last parameter was passed another value at least once.
    """
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not calls:
        return {}
    positional = [*node.args.posonlyargs, *node.args.args]
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(node.args.defaults):]], node.args.defaults,
                        strict=True))
    out: dict[str, Leaf] = {}
    for name in reversed(params):
        default = defaults.get(name)
        leaf = _at_default(default, name, calls) if isinstance(default, ast.Constant) else None
        if leaf is None:
            break
        out[name] = leaf
    return out


def _at_default(default: ast.Constant, name: str, calls: Sequence[Call]) -> Leaf | None:
    """The recorded leaf of ``name`` where every call bound a value TensorFlow's Literal takes as the default."""
    found: Leaf | None = None
    for call in calls:
        leaves = [leaf for leaf in call.signature if
                  leaf.path == name or leaf.path.startswith((f"{name}[", f"{name}."))]
        if len(leaves) != 1 or leaves[0].kind != PYTHON:
            return None  # a tensor, a container or nothing recorded there: not the default constant
        leaf = leaves[0]
        # The default as the recorder writes a Python value, under the same Literal rule as the call.
        rule = tuple(e for e in leaf.extra if e[0] == LITERAL_RULE)
        expected = Leaf(name, PYTHON, value=repr(default.value), type_name=type(default.value).__name__, extra=rule)
        if literal_key(leaf) != literal_key(expected):
            return None
        found = found or leaf
    return found


def left_out_line(left_out: dict[str, Leaf]) -> str:
    """The plan's words for the parameters a signature leaves at their default."""
    names = ", ".join(f"{name}={leaf.value}" for name, leaf in reversed(left_out.items()))
    return f"left out at their default, as every call passed them: {names} (TensorFlow binds the default as a constant)"


def left_out_reason(left_out: dict[str, Leaf]) -> str:
    """Why leaving a parameter at its default is unsafe: the signature refuses any other value."""
    names = ", ".join(f"{name}={leaf.value}" for name, leaf in reversed(left_out.items()))
    return (
        f"the signature leaves {names} out, so TensorFlow binds that default and refuses a call passing "
        "another value (Binding inputs to tf.function failed), which the function accepted before; no "
        "call of this run passed one"
    )
