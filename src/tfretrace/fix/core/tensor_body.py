"""Let a function's body take a tensor where it took a Python value: what stops it, and the edits that do it."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tfretrace.fix.core.anchor_base import span_of
from tfretrace.fix.core.body import constant_calls, python_if, unsafe_uses
from tfretrace.fix.core.candidate import FunctionContext
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.source import Replacement


def body_problem(
    ctx: FunctionContext, param: str, arithmetic: bool, allow_constant: bool = False, probed: bool = False
) -> str | None:
    """Uses of ``param`` in the body that need a Python value, as one line; None when there are none.

    ``probed``: TensorFlow traces the body with a tensor there (runtime.probe), which settles what a
    trace shows (autograph turns a Python ``if`` on a tensor into graph control flow, or fails):
    only the uses that would silently read the value another way are left to find here.
    """
    node = None if ctx.definition is None else ctx.definition.node
    if node is None:
        return None
    uses = [u for u in unsafe_uses(node, param) if not (allow_constant and u.startswith("tf.constant("))]
    if probed:
        # Indexing with a tensor either traces (a tensor's slice, run by TensorFlow to the same
        # results or not: runtime.probe) or fails at the trace (a list, a dict): TensorFlow decides.
        uses = [u for u in uses if u != f"indexing with {param}"]
    if not probed and python_if(node, param):
        uses.append(f"a Python if on {param}")
    if arithmetic:
        # An int32 tensor mixes with int literals (step % 10) but not with float tensors (x * n);
        # the other operand's type is unknown unless it is a literal int.
        for sub in ast.walk(node):
            if not isinstance(sub, ast.BinOp):
                continue
            sides = (sub.left, sub.right)
            mine = [s for s in sides if isinstance(s, ast.Name) and s.id == param]
            other = [s for s in sides if s not in mine]
            literal = all(isinstance(s, ast.Constant) and type(s.value) is int for s in other)
            if mine and not literal:
                uses.append(f"arithmetic with {param}: an int32 tensor does not mix with float tensors")
                break
    return ", ".join(dict.fromkeys(uses)) or None


def tensor_body(
    ctx: FunctionContext, param: str, dtype: str, arithmetic: bool, probed: bool = False
) -> tuple[tuple[Replacement, ...], str | None]:
    """Body edits that let ``param`` be a tensor (``tf.constant`` -> ``tf.convert_to_tensor``).

    Also what still needs a Python value there (None when nothing does); ``probed`` as ``body_problem``.
    """
    problem = body_problem(ctx, param, arithmetic, probed=probed)
    definition = ctx.definition
    if problem is None or definition is None or definition.node is None or definition.tf_alias is None:
        return (), problem
    calls = constant_calls(definition.node, param, definition.tf_alias, dtype)
    if not calls:
        return (), problem
    rest = body_problem(ctx, param, arithmetic, allow_constant=True, probed=probed)
    if rest:
        return (), rest
    edits = []
    for call in calls:
        span, func = span_of(call, definition.path), span_of(call.func, definition.path)
        text, head = ctx.reader.text(span), ctx.reader.text(func)
        edits.append(Replacement(span, f"{definition.tf_alias}.convert_to_tensor" + text[len(head):]))
    return tuple(edits), None


def with_body(
    edits: tuple[Replacement, ...], body: tuple[Replacement, ...], missing: list[str]
) -> tuple[Replacement, ...]:
    """The call-site edits with the body's, only when every recorded call site is edited."""
    # The body takes a tensor only where every call passes one: no body edit without the call sites.
    return (*body, *edits) if edits and not missing else edits


def body_note(body: tuple[Replacement, ...], ctx: FunctionContext) -> str:
    """What the summary adds when the body is edited too."""
    return f", and {ctx.tf}.convert_to_tensor for {ctx.tf}.constant in {ctx.short}'s body" if body else ""


def add_n_body(ctx: FunctionContext, param: str) -> Replacement | None:
    """``tf.add_n(param)`` -> ``tf.reduce_sum(param, axis=0)``, when that call is the body's only use of ``param``."""
    definition = ctx.definition
    if definition is None or definition.node is None or definition.tf_alias is None:
        return None
    # The parameter in the def's own arguments is an ast.arg, not a Name: every Name is a use.
    uses = [n for n in ast.walk(definition.node) if isinstance(n, ast.Name) and n.id == param]
    sums = [
        n for n in ast.walk(definition.node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_n"
        and isinstance(n.func.value, ast.Name) and n.func.value.id == definition.tf_alias
        and len(n.args) == 1 and not n.keywords and isinstance(n.args[0], ast.Name) and n.args[0].id == param
    ]
    if len(sums) != 1 or len(uses) != 1:
        return None
    return Replacement(span_of(sums[0], definition.path), f"{definition.tf_alias}.reduce_sum({param}, axis=0)")


def value_condition(dtype: str, depends: str | None) -> str | None:
    """Why a Python value passed as a tensor of ``dtype`` is not safe, or None (fix.core.safety's ``value_checked``).

    ``depends``: where TensorFlow found each trace's graph to depend on the value (None: only as
    data). An int32 refuses the Python ints beyond its range that the original took.
    """
    if depends is not None:
        return depends
    if dtype == "int32":
        return "a Python int beyond int32's range fails at the call site, where the original took it"
    return None


_FLOAT32_EXACT = 2**24  # every int up to this magnitude is a float32 exactly


def rounded_ints(calls: Sequence[Call], path: str) -> str | None:
    """Why ints passed as a float32 tensor do not keep their values: float32 holds every int up to 2**24
    exactly, and the values recorded must lie there (a step counter past it would be rounded)."""
    values = [leaf.value for c in calls for leaf in c.signature if leaf.path == path]
    if all(v is not None and v.lstrip("-").isdigit() and abs(int(v)) <= _FLOAT32_EXACT for v in values):
        return None
    return f"{path} took ints that a float32 tensor cannot hold exactly (beyond 2**24), or values not recorded"
