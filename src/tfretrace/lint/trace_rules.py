"""The rules for trace-time traps: Python code inside a tf.function body that runs only once."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfretrace.lint._context import Ctx, Finding
from tfretrace.lint.rules import rule

_CLOCKS = frozenset(
    {"time.time", "time.time_ns", "time.perf_counter", "time.monotonic", "time.process_time",
     "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
     "datetime.date.today"}
)  # fmt: skip
_VARIABLES = frozenset(
    {"tensorflow.Variable", "keras.Variable", "tensorflow.python.ops.variables.Variable"}
)
_MUTATORS = frozenset({"append", "extend", "insert"})


def _is_random(name: str) -> bool:
    return name.startswith(("random.", "numpy.random."))


def _traced_name(ctx: Ctx) -> str:
    return ctx.tf_def.name if ctx.tf_def is not None else "?"


@rule("TFR108", ast.Call)
def print_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if ctx.tf_def is None or not isinstance(func, ast.Name) or func.id != "print":
        return
    if ctx.info.imports.is_builtin("print", ctx.shadows):
        yield node, f"print() in tf.function {_traced_name(ctx)!r} runs only when it traces"


@rule("TFR109", ast.Call)
def python_random_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if ctx.tf_def is None:
        return
    name = ctx.resolve(node.func, _is_random)
    if name is not None:
        yield node, f"{name}() in tf.function {_traced_name(ctx)!r} is drawn once, at trace time"


@rule("TFR110", ast.Call)
def wall_clock_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if ctx.tf_def is None:
        return
    name = ctx.resolve(node.func, _CLOCKS.__contains__)
    if name is not None:
        yield node, f"{name}() in tf.function {_traced_name(ctx)!r} is read once, at trace time"


@rule("TFR111", ast.Call)
def outer_list_mutation(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if ctx.tf_def is None or not isinstance(func, ast.Attribute) or func.attr not in _MUTATORS:
        return
    target = func.value
    if not isinstance(target, ast.Name) or target.id in ctx.tf_locals:
        return
    if target.id in ctx.info.imports.aliases:  # a module's function, not a list
        return
    yield node, f"{target.id}.{func.attr}() in tf.function {_traced_name(ctx)!r} runs once per trace"


@rule("TFR112", ast.Global, ast.Nonlocal)
def global_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, (ast.Global, ast.Nonlocal))
    if ctx.tf_def is not None:
        kind = "global" if isinstance(node, ast.Global) else "nonlocal"
        names = ", ".join(node.names)
        yield node, f"{kind} {names} in tf.function {_traced_name(ctx)!r} is frozen at trace time"


@rule("TFR113", ast.Call)
def variable_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if ctx.tf_def is None or ctx.guarded:
        return
    if ctx.resolve(node.func, _VARIABLES.__contains__) is not None:
        yield node, f"a variable is created on every trace of tf.function {_traced_name(ctx)!r}"


@rule("TFR114", ast.Call)
def numpy_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if ctx.tf_def is None or node.args or node.keywords:
        return
    if isinstance(func, ast.Attribute) and func.attr == "numpy":
        yield node, f".numpy() inside tf.function {_traced_name(ctx)!r}"
