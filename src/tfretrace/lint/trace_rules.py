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
    if _announces_tracing(node):
        return  # print("Tracing with", x): the author wants it once per trace, on purpose
    if _converts_builtins(ctx.tf_def):
        return  # AutoGraph's BUILTIN_FUNCTIONS feature turns print() into tf.print()
    if ctx.info.imports.is_builtin("print", ctx.shadows):
        yield node, f"print() in tf.function {_traced_name(ctx)!r} runs only when it traces"


def _converts_builtins(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call)
        and any(k.arg == "experimental_autograph_options" and "BUILTIN_FUNCTIONS" in ast.dump(k.value)
                for k in d.keywords)
        for d in func.decorator_list
    )


def _announces_tracing(call: ast.Call) -> bool:
    """A print whose text says it reports tracing ("Tracing with", "traced", "retracing")."""
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "trac" in n.value.lower()
        for arg in call.args
        for n in ast.walk(arg)
    )


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
    if ctx.tf_def is not None and _created_once(target.id, ctx.tf_def):
        return  # `if not slot: slot.append(tf.Variable(...))`: TensorFlow's create-once idiom
    yield node, f"{target.id}.{func.attr}() in tf.function {_traced_name(ctx)!r} runs once per trace"


def _is_empty_test(test: ast.expr, name: str) -> bool:
    """``not name``, ``name is None``, ``len(name) == 0`` (or ``not name`` inside an ``and``)."""
    if isinstance(test, ast.BoolOp):
        return any(_is_empty_test(v, name) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id == name
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len":
            left = left.args[0] if left.args else left
        return (
            isinstance(left, ast.Name)
            and left.id == name
            and isinstance(right, ast.Constant)
            and right.value in (None, 0)
            and isinstance(test.ops[0], (ast.Is, ast.Eq))
        )
    return False


def _created_once(name: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """True when ``name`` is only touched under ``if <name is empty/None>:`` in the function."""
    return any(isinstance(n, ast.If) and _is_empty_test(n.test, name) for n in ast.walk(func))


@rule("TFR112", ast.Global, ast.Nonlocal)
def global_in_tf_function(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, (ast.Global, ast.Nonlocal))
    if ctx.tf_def is None or ctx.eager:
        return  # under tf.init_scope() the author has stepped out of the graph on purpose
    read = [n for n in node.names if _read_as_state(n, ctx.tf_def)]
    if read:
        kind = "global" if isinstance(node, ast.Global) else "nonlocal"
        names = ", ".join(read)
        yield node, f"{kind} {names} in tf.function {_traced_name(ctx)!r} is frozen at trace time"


def _read_as_state(name: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """True when the function reads ``name`` other than to create it once.

    A name only written (a result handed out of the trace), or created once under ``if g is None:``
    and used after (``g = tf.random.Generator...``), is not state frozen into the graph.
    """
    for guard in ast.walk(func):
        if isinstance(guard, ast.If) and _is_empty_test(guard.test, name) and any(
            isinstance(t, ast.Name) and t.id == name and isinstance(t.ctx, ast.Store)
            for stmt in guard.body
            for t in ast.walk(stmt)
        ):
            return False  # created once under `if name is None:`, then used: the lazy-init idiom
    for n in ast.walk(func):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
            return True
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            return True
    return False


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
    if ctx.tf_def is None or ctx.eager or node.args or node.keywords:
        return
    if isinstance(func, ast.Attribute) and func.attr == "numpy":
        yield node, f".numpy() inside tf.function {_traced_name(ctx)!r}"
