"""The Keras rules: models built, compiled, loaded or predicted once per loop iteration or call."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from tfretrace.lint._context import Ctx, Finding, is_handler, per_call
from tfretrace.lint._flow import changes_per_step
from tfretrace.lint._module import is_model_factory, is_model_loader
from tfretrace.lint._names import dotted
from tfretrace.lint.findings import CONFIRMED, LIKELY
from tfretrace.lint.rules import arguments, mentions, receiver_name, rule

_ARCH = ("build", "_build", "make", "_make", "create", "_create")
_COMPILE_KWARGS = frozenset(
    {"optimizer", "loss", "metrics", "loss_weights", "run_eagerly", "jit_compile",
     "steps_per_execution", "weighted_metrics"}
)  # fmt: skip


def _known_model(receiver: ast.expr, ctx: Ctx) -> bool:
    """True when the file binds ``receiver`` to a Keras model it builds, loads or defines."""
    info = ctx.info
    if isinstance(receiver, ast.Name):
        return receiver.id in info.model_names
    return (
        isinstance(receiver, ast.Attribute)
        and isinstance(receiver.value, ast.Name)
        and receiver.value.id == "self"
        and receiver.attr in info.model_attrs
    )


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
        and any(ctx.depends_on_loop(a) for a in arguments(n))
        for stmt in body
        for n in ast.walk(stmt)
    )


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
    if not (kwargs & _COMPILE_KWARGS or "model" in receiver_name(receiver).lower() or _known_model(receiver, ctx)):
        return
    parts = dotted(receiver)
    # A model rebuilt in this loop must be compiled in it; TFR103 reports the rebuild.
    if parts and parts[0] in ctx.loop_names:
        return
    sure = _known_model(receiver, ctx) or bool(kwargs & _COMPILE_KWARGS)
    yield node, f"{'.'.join(parts or ['model'])}.compile() is called inside a loop", CONFIRMED if sure else LIKELY


@rule("TFR105", ast.Call)
def keras_load_model_per_call(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    if ctx.resolve(node.func, is_model_loader) is None:
        return
    args = list(arguments(node))
    if ctx.in_loop:
        # Loading a different checkpoint per iteration is legitimate.
        if not any(ctx.depends_on_loop(a) for a in args):
            yield node, "the same model is loaded on every loop iteration"
    elif ctx.func is not None and per_call(ctx.func, ctx.info):
        params = ctx.params
        if not any(mentions(a, p) for a in args for p in params):
            yield node, f"a model is loaded on every call of {ctx.func.name!r}"


@rule("TFR107", ast.Call)
def keras_predict_in_loop(node: ast.AST, ctx: Ctx) -> Iterator[Finding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if not (ctx.in_loop and ctx.info.imports.uses_tensorflow and ctx.tf_def is None):
        return
    if not isinstance(func, ast.Attribute) or func.attr != "predict":
        return
    name = receiver_name(func.value)
    known = _known_model(func.value, ctx)
    if not (known or "model" in name.lower()) or ctx.resolve(func.value) is not None:
        return
    parts = dotted(func.value)
    if parts and parts[0] in ctx.loop_names:  # a new model per iteration: TFR103's business
        return
    # Only predict on data that changes per iteration (a sample, a small batch, a growing decode
    # sequence) retraces or pays predict's setup per step; the same whole dataset predicted once
    # per epoch, or a loop of two or three cases, is not the bug.
    data = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "x"), None)
    if data is None or _short_loop(ctx.loop_node):
        return
    if not changes_per_step(data, ctx.loop_node, node, ctx.counters):
        return
    yield node, f"{name}.predict() is called inside a loop", CONFIRMED if known else LIKELY
