"""The lint rules: one small check function per catalogue code, registered by node type."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from tfretrace.lint._context import Check, Ctx, Finding, Scope, is_handler, per_call
from tfretrace.lint._module import FUNCS, LOOPS, is_model_factory, is_model_loader
from tfretrace.lint._names import TF_FUNCTION, dotted

CHECKS: dict[type[ast.AST], list[tuple[str, Check]]] = {}
CODES: list[str] = []

_ARCH = ("build", "_build", "make", "_make", "create", "_create")
_COMPILE_KWARGS = frozenset(
    {"optimizer", "loss", "metrics", "loss_weights", "run_eagerly", "jit_compile",
     "steps_per_execution", "weighted_metrics"}
)  # fmt: skip


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


def _mentions(node: ast.AST, name: str) -> bool:
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


def _known_tf_function(func: ast.expr, ctx: Ctx) -> str | None:
    """The name of a tf.function defined in this file that ``func`` calls, or None."""
    info = ctx.info
    if isinstance(func, ast.Name) and func.id in info.tf_function_names:
        return func.id
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and func.attr in info.tf_function_attrs
    ):
        return f"self.{func.attr}"
    return None


def _arguments(node: ast.Call) -> Iterator[ast.expr]:
    yield from node.args
    for kw in node.keywords:
        yield kw.value


def _receiver_name(node: ast.expr) -> str:
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


# --- Keras models built, compiled, loaded or predicted per iteration -------------------------


def _builds_architecture(func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """``__init__``, ``build`` and factories: sub-models made in a loop there are layers."""
    return func is not None and (func.name in ("__init__", "build") or func.name.startswith(_ARCH))


@rule("TFR103", ast.Call)
def keras_model_in_loop(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    handler = ctx.func is not None and is_handler(ctx.func)
    if not (ctx.in_loop or handler) or _builds_architecture(ctx.func):
        return
    func = node.func
    builds = ctx.resolve(func, is_model_factory) is not None or (
        isinstance(func, ast.Name)
        and func.id in ctx.info.model_classes
        and func.id not in ctx.shadows
    )
    # A model whose layers or inputs depend on the loop (a grid search) cannot be reused.
    if builds and not (ctx.in_loop and (ctx.depends_on_loop(node) or _configured_by_loop(node, ctx)
                                        or _kept_by_loop(node, ctx))):
        where = "a request handler" if handler and not ctx.in_loop else "a loop"
        yield node, f"a Keras model is built inside {where}"


def _configured_by_loop(node: ast.Call, ctx: Ctx) -> bool:
    """True when the model built here is then given loop-dependent layers (``m.add(Dense(i))``)."""
    loop = ctx.loop_node
    if loop is None:
        return False
    body = getattr(loop, "body", ())
    names = _assigned_names(node, body)
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in names
        and any(ctx.depends_on_loop(a) for a in _arguments(n))
        for stmt in body
        for n in ast.walk(stmt)
    )


def _loop_targets(loop: ast.AST | None) -> set[str]:
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    if isinstance(loop, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return {n.id for g in loop.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    return set()


def _per_item(data: ast.expr, ctx: Ctx) -> bool:
    """True when ``data`` is one item or batch of what the loop walks: the loop target, an element
    picked with it (``x[i]``, ``x[i:i + 8]``), that wrapped (``np.expand_dims(s, 0)``, ``[s]``), or a
    name the loop body fills from ``next(iterator)``."""
    loop = ctx.loop_node
    targets = _loop_targets(loop)
    fed = {
        t.id
        for stmt in getattr(loop, "body", ())
        for n in ast.walk(stmt)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name) and n.value.func.id == "next"
        for target in n.targets
        for t in ast.walk(target)
        if isinstance(t, ast.Name)
    }
    names = targets | fed

    def item(expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in names
        if isinstance(expr, ast.Subscript):
            return item(expr.value) or any(isinstance(n, ast.Name) and n.id in targets for n in ast.walk(expr.slice))
        if isinstance(expr, (ast.List, ast.Tuple)):
            return any(item(e) for e in expr.elts)
        if isinstance(expr, ast.Call):
            return any(item(a) for a in expr.args)
        return False

    return item(data)


def _assigned_names(node: ast.Call, body: Iterable[ast.stmt]) -> set[str]:
    return {
        t.id
        for stmt in body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Assign) and n.value is node
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def _kept_by_loop(node: ast.Call, ctx: Ctx) -> bool:
    """True when each model built here is kept: ``models.append(m)``, ``models[k] = m``, ``yield m``
    (an ensemble, or one model per task), not built for one use and dropped."""
    body = list(getattr(ctx.loop_node, "body", ()))
    names = _assigned_names(node, body)
    for stmt in body:
        for n in ast.walk(stmt):
            if (
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("append", "add", "insert", "extend")
                and any(isinstance(a, ast.Name) and a.id in names for a in n.args)
            ):
                return True
            if (
                isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in names
                and any(isinstance(t, (ast.Subscript, ast.Attribute)) for t in n.targets)
            ):
                return True
            if isinstance(n, (ast.Yield, ast.Return)) and isinstance(n.value, ast.Name) and n.value.id in names:
                return True
    return False


def _short_loop(loop: ast.AST | None) -> bool:
    """A loop over a literal of at most three items, range(k) or dataset.take(k) for k <= 3."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if isinstance(it, (ast.List, ast.Tuple, ast.Set)):
        return len(it.elts) <= 3
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr == "take"
        and len(it.args) == 1
        and isinstance(it.args[0], ast.Constant)
        and isinstance(it.args[0].value, int)
    ):
        return it.args[0].value <= 3
    return (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and len(it.args) == 1
        and isinstance(it.args[0], ast.Constant)
        and isinstance(it.args[0].value, int)
        and it.args[0].value <= 3
    )


@rule("TFR104", ast.Call)
def keras_compile_in_loop(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if not (ctx.in_loop and ctx.info.imports.uses_tensorflow):
        return
    if not isinstance(func, ast.Attribute) or func.attr != "compile":
        return
    receiver = func.value
    if ctx.resolve(receiver) is not None:  # re.compile, a module function
        return
    kwargs = {kw.arg for kw in node.keywords}
    if not (kwargs & _COMPILE_KWARGS or "model" in _receiver_name(receiver).lower()):
        return
    parts = dotted(receiver)
    # A model rebuilt in this loop must be compiled in it; TFR103 reports the rebuild.
    if parts and parts[0] in ctx.loop_names:
        return
    yield node, f"{'.'.join(parts or ['model'])}.compile() is called inside a loop"


@rule("TFR105", ast.Call)
def keras_load_model_per_call(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if ctx.resolve(node.func, is_model_loader) is None:
        return
    args = list(_arguments(node))
    if ctx.in_loop:
        # Loading a different checkpoint per iteration is legitimate.
        if not any(ctx.depends_on_loop(a) for a in args):
            yield node, "the same model is loaded on every loop iteration"
    elif ctx.func is not None and per_call(ctx.func, ctx.info):
        params = ctx.params
        if not any(_mentions(a, p) for a in args for p in params):
            yield node, f"a model is loaded on every call of {ctx.func.name!r}"


@rule("TFR107", ast.Call)
def keras_predict_in_loop(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if not (ctx.in_loop and ctx.info.imports.uses_tensorflow and ctx.tf_def is None):
        return
    if not isinstance(func, ast.Attribute) or func.attr != "predict":
        return
    name = _receiver_name(func.value)
    if "model" not in name.lower() or ctx.resolve(func.value) is not None:
        return
    parts = dotted(func.value)
    if parts and parts[0] in ctx.loop_names:  # a new model per iteration: TFR103's business
        return
    # Only predict on data that changes per iteration (a sample, a small batch) retraces; the same
    # whole dataset predicted once per epoch, or a loop of two or three cases, is not the bug.
    data = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "x"), None)
    if data is None or not _per_item(data, ctx) or _short_loop(ctx.loop_node):
        return
    yield node, f"{name}.predict() is called inside a loop"


# --- Python values passed to tf.functions ----------------------------------------------------


def _is_counter_expr(node: ast.expr, counters: frozenset[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in counters
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        return any(_is_counter_expr(s, counters) for s in sides) and all(
            isinstance(s, ast.Constant) or _is_counter_expr(s, counters) for s in sides
        )
    return False


@rule("TFR106", ast.Call)
def python_counter_argument(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if not ctx.counters:
        return
    callee = _known_tf_function(node.func, ctx)
    if callee is None:
        return
    for arg in _arguments(node):
        if _is_counter_expr(arg, ctx.counters):
            yield arg, f"loop counter passed to tf.function {callee!r}"


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
    for arg in _arguments(node):
        if _is_python_number(arg, ctx):
            yield arg, f"data-dependent Python number passed to tf.function {callee!r}"


@rule("TFR115", ast.Call)
def deprecated_relax_shapes(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    for kw in node.keywords:
        if kw.arg == "experimental_relax_shapes" and ctx.resolve(node.func) in TF_FUNCTION:
            yield node, "experimental_relax_shapes is deprecated"
