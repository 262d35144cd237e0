"""The rule registry, and the rules about creating tf.functions and the Python values passed to them."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from tfretrace.lint._context import Check, Ctx, Finding, Scope, per_call
from tfretrace.lint._module import FUNCS, LOOPS
from tfretrace.lint._names import TF_FUNCTION, dotted
from tfretrace.lint.findings import CONFIRMED, LIKELY

CHECKS: dict[type[ast.AST], list[tuple[str, Check]]] = {}
CODES: list[str] = []

def rule(code: str, *types: type[ast.AST]) -> Callable[[Check], Check]:
    """Register a check for ``code`` on nodes of ``types``."""

    def register(check: Check) -> Check:
        for node_type in types:
            CHECKS.setdefault(node_type, []).append((code, check))
        if code not in CODES:
            CODES.append(code)
        return check

    return register


def _is_tf_function(node: ast.expr, ctx: Ctx) -> bool:
    """``tf.function`` itself, bare or called with options (``tf.function(jit_compile=True)``)."""
    if isinstance(node, ast.Call):
        node = node.func
    return ctx.resolve(node, TF_FUNCTION.__contains__) is not None


def _tf_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Ctx) -> ast.expr | None:
    return next((d for d in node.decorator_list if _is_tf_function(d, ctx)), None)


def _creation_target(node: ast.Call, ctx: Ctx) -> ast.expr | None:
    """``g`` for ``tf.function(g, ...)`` or ``tf.function(...)(g)``; None if not a creation."""
    if isinstance(node.func, ast.Call) and _is_tf_function(node.func, ctx):
        return node.args[0] if node.args else None
    if ctx.resolve(node.func, TF_FUNCTION.__contains__) is None:
        return None
    if node.args:
        return node.args[0]
    return next((kw.value for kw in node.keywords if kw.arg == "func"), None)


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run once per call of the enclosing function: not in loops or defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*LOOPS, *FUNCS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, field, ()))
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)


def mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _mentions_uncalled(node: ast.AST, name: str) -> bool:
    """True when ``name`` appears other than as the callee of a call (``f`` in ``[f]``)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return any(
        isinstance(n, ast.Name) and n.id == name and id(n) not in called for n in ast.walk(node)
    )


def _escapes(name: str, body: list[ast.stmt]) -> bool:
    """True when a created tf.function is returned, stored or handed on (so it is reused)."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
                if _mentions_uncalled(node.value, name):
                    return True
            elif isinstance(node, ast.Assign) and _mentions_uncalled(node.value, name):
                if any(not isinstance(t, ast.Name) for t in node.targets):
                    return True
            elif isinstance(node, ast.Call):
                args = [*node.args, *(kw.value for kw in node.keywords)]
                if any(isinstance(a, ast.Name) and a.id == name for a in args):
                    return True
    return False


def _called(name: str, body: list[ast.stmt]) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for stmt in body
        for n in ast.walk(stmt)
    )


def _known_tf_function(func: ast.expr, ctx: Ctx) -> tuple[str, str] | None:
    """The name of the tf.function defined in this file that ``func`` calls, and how sure that is.

    ``step(...)`` and ``self.step(...)`` naming one are confirmed; ``trainer.step(...)``, whose
    receiver's class is unknown but some class here defines ``step`` as a tf.function, is likely.
    """
    info = ctx.info
    if isinstance(func, ast.Name) and func.id in info.tf_function_names:
        return func.id, CONFIRMED
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.attr in info.tf_function_attrs
        and ctx.resolve(func.value) is None  # not a module's function of that name
    ):
        sure = CONFIRMED if func.value.id == "self" else LIKELY
        return f"{func.value.id}.{func.attr}", sure
    return None


def arguments(node: ast.Call) -> Iterator[ast.expr]:
    yield from node.args
    for kw in node.keywords:
        yield kw.value


def receiver_name(node: ast.expr) -> str:
    parts = dotted(node)
    return parts[-1] if parts else ""


# --- where tf.function objects are created --------------------------------------------------


@rule("TFR101", ast.FunctionDef, ast.AsyncFunctionDef, ast.Call)
def tf_function_in_loop(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    if not ctx.in_loop:
        return
    if isinstance(node, FUNCS):
        deco = _tf_decorator(node, ctx)
        if deco is not None:
            yield deco, f"tf.function {node.name!r} is defined inside a loop"
    elif isinstance(node, ast.Call):
        target = _creation_target(node, ctx)
        # Wrapping a different function per iteration (`for fn in fns: tf.function(fn)`) is fine.
        if target is not None and not ctx.depends_on_loop(target):
            yield node, "tf.function(...) is called inside a loop"
        elif target is None and _factory_in_loop(node, ctx):
            # `step = make_step(model)` per epoch: a new tf.function object (empty cache) each time.
            assert isinstance(node.func, ast.Name)
            yield node, f"{node.func.id}() makes a new tf.function and is called inside a loop", LIKELY


def _factory_in_loop(node: ast.Call, ctx: Ctx) -> bool:
    """A call of this file's tf.function factory with the same arguments every iteration."""
    func = node.func
    if not isinstance(func, ast.Name) or func.id not in ctx.info.tf_function_factories:
        return False
    if func.id in ctx.shadows:
        return False  # a local name of that spelling, not the module's factory
    if any(ctx.depends_on_loop(a) for a in arguments(node)) or ctx.loop_node is None:
        return False
    # Only a function that is then called traces: `make(m)(x)`, or `f = make(m)` and `f(...)` in the loop.
    body = list(ast.walk(ctx.loop_node))
    if any(isinstance(n, ast.Call) and n.func is node for n in body):
        return True
    names = {t.id for n in body if isinstance(n, ast.Assign) and n.value is node for t in n.targets
             if isinstance(t, ast.Name)}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names for n in body)


_TRACING_DECORATORS = frozenset({"function", "computation", "tf_computation", "jit", "defun"})


def _traced_itself(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function decorated to be traced or compiled (tf.function, tff computations, jit): its
    body runs once per trace, so a tf.function made in it is made once per trace, not per call."""
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        parts = dotted(target)
        if parts and parts[-1] in _TRACING_DECORATORS:
            return True
    return False


@rule("TFR102", ast.FunctionDef, ast.AsyncFunctionDef)
def tf_function_per_call(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, FUNCS)
    if not per_call(node, ctx.info) or _traced_itself(node):
        return
    inner = ctx.derive(shadows=ctx.shadows + Scope(node.body, node.args))
    created: dict[str, ast.AST] = {}
    for stmt in _statements(node.body):
        if isinstance(stmt, FUNCS):
            deco = _tf_decorator(stmt, inner)
            if deco is not None:
                created[stmt.name] = deco
            continue
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Call)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and _creation_target(stmt.value, inner) is not None
        ):
            created[stmt.targets[0].id] = stmt.value
        for sub in ast.walk(stmt):
            # tf.function(g)(x): created and called at once.
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Call)
                and _creation_target(sub.func, inner) is not None
            ):
                yield sub.func, f"tf.function(...) is created and called in {node.name!r}"
    for name, where in created.items():
        if _called(name, node.body) and not _escapes(name, node.body):
            yield where, f"tf.function {name!r} is created and called in {node.name!r}"


# --- Python values passed to tf.functions ----------------------------------------------------


_NUMBER_WRAPPERS = frozenset({"int", "float", "min", "max", "abs", "round"})


def _is_counter_expr(node: ast.expr, counters: frozenset[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in counters
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        return any(_is_counter_expr(s, counters) for s in sides) and all(
            isinstance(s, ast.Constant) or _is_counter_expr(s, counters) for s in sides
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _NUMBER_WRAPPERS:
        # float(tries), min(step, 10): still a Python number that changes with the counter
        return any(_is_counter_expr(a, counters) for a in node.args) and all(
            isinstance(a, ast.Constant) or _is_counter_expr(a, counters) for a in node.args
        )
    return False


@rule("TFR106", ast.Call)
def python_counter_argument(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if not (ctx.counters or ctx.maybe_counters):
        return
    callee = _known_tf_function(node.func, ctx)
    if callee is None:
        return
    name, sure = callee
    for arg in arguments(node):
        if isinstance(arg, ast.Name) and arg.id in ctx.stepped and arg.id in ctx.counters:
            # lr = lr * 0.9 per epoch: a new Python float per iteration, one trace each
            yield arg, f"Python number {arg.id!r}, changed every iteration, passed to tf.function {name!r}", sure
        elif _is_counter_expr(arg, ctx.counters):
            yield arg, f"loop counter passed to tf.function {name!r}", sure
        elif _is_counter_expr(arg, ctx.counters | ctx.maybe_counters):
            # a `while <tensor test>:` that AutoGraph converts if this function runs in a trace
            yield arg, f"loop counter passed to tf.function {name!r}", LIKELY


def _is_python_number(node: ast.expr, ctx: Ctx) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "len":
            return ctx.info.imports.is_builtin("len", ctx.shadows)
        return isinstance(func, ast.Attribute) and func.attr in ("numpy", "item") and not node.args
    if isinstance(node, ast.Subscript):
        value = node.value
        return isinstance(value, ast.Attribute) and value.attr == "shape"
    return False


@rule("TFR116", ast.Call)
def python_scalar_argument(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    callee = _known_tf_function(node.func, ctx)
    if callee is None:
        return
    name, sure = callee
    for arg in arguments(node):
        if _is_python_number(arg, ctx):
            yield arg, f"data-dependent Python number passed to tf.function {name!r}", sure


@rule("TFR115", ast.Call)
def deprecated_relax_shapes(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    for kw in node.keywords:
        if kw.arg == "experimental_relax_shapes" and ctx.resolve(node.func) in TF_FUNCTION:
            yield node, "experimental_relax_shapes is deprecated"
