"""Fix kind hoist-factory-call: a factory that only makes a tf.function, called on each pass, called once before.

``f = make_f(2.0)`` in a loop makes a new tf.function (an empty trace cache) on every pass. Where
``make_f`` is a module-level def whose body is nothing but the tf.function def and ``return`` of
it, and what that def can see cannot change between passes (its own names, the factory's
parameters bound to constants, and module names bound once by a def, class or import), one call
before the loop makes one object that computes the same on every pass.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.anchor_moves import move, recorded_sites
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.hoist import made_once
from tfretrace.fix.core.kind import Kind, Row
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import DefInfo, Replacement, SourceReader

NAME = "hoist-factory-call"


_BUILTINS = frozenset(dir(builtins))


def factory_edits(
    reader: SourceReader, definition: DefInfo | None, site: str
) -> tuple[str, tuple[Replacement, Replacement]] | None:
    """``f = make_f(2.0)`` in the loop around the call ``f(x)`` at ``site``, moved before that loop.

    Returns the factory call's bound name and the edits, or None where moving it might change
    what a pass computes (see the module docstring and :func:`tfretrace.fix.core.hoist.made_once`).
    """
    if definition is None or definition.outer_kind != "def" or definition.outer is None or definition.node is None:
        return None
    parsed = reader.module(definition.path)
    path, _, line_text = site.rpartition(":")
    if parsed is None or path != definition.path or not line_text.isdigit():
        return None
    tree = parsed[1]
    factory = definition.outer
    if not _pure_factory(tree, factory, definition.node):
        return None
    called = [
        n.func.id for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.lineno == int(line_text)
    ]
    for name in dict.fromkeys(called):
        moved = made_once(reader, site, name, lambda tree, func: func == factory and _constant_call(tree, factory))
        if moved is not None:
            return name, moved
    return None


def _pure_factory(tree: ast.Module, name: str, inner: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A module-level, undecorated def: a docstring, the tf.function def and ``return <def>``, nothing else."""
    outers = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    if len(outers) != 1 or outers[0].decorator_list or _module_bindings(tree).get(name, 0) != 1:
        return False
    outer = outers[0]
    body = list(outer.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    shape = (
        len(body) == 2 and body[0] is inner
        and isinstance(body[1], ast.Return) and isinstance(body[1].value, ast.Name) and body[1].value.id == inner.name
    )
    if not shape or _rebinds_globals(tree):
        return False
    params = {a.arg for a in (*outer.args.posonlyargs, *outer.args.args, *outer.args.kwonlyargs)}
    if outer.args.vararg or outer.args.kwarg or outer.args.defaults or outer.args.kw_defaults:
        return False
    return _sees_only_fixed_names(tree, inner, params)


def _sees_only_fixed_names(tree: ast.Module, inner: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]) -> bool:
    # Every name the def reads: its own, the factory's parameters, a builtin, or a module name bound
    # once by a def, class or import (a value the loop could change would be read at trace time).
    own = {a.arg for a in ast.walk(inner.args) if isinstance(a, ast.arg)}
    own |= {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    fixed = _fixed_module_names(tree)
    for node in ast.walk(inner):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not inner:
            return False  # a nested scope: its names are not judged here
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in own or node.id in params or node.id in fixed:
                continue
            if node.id in _BUILTINS and node.id not in _module_bindings(tree):
                continue
            return False
    return True


def _module_bindings(tree: ast.Module) -> dict[str, int]:
    """How many times each name is bound by a statement at module level (in any block of it)."""
    counts: dict[str, int] = {}
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.extend((a.asname or a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.append(node.id)
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        if not isinstance(node, scopes):
            todo.extend(ast.iter_child_nodes(node))
    return counts


def _fixed_module_names(tree: ast.Module) -> set[str]:
    # Names bound once at module level, by a def, a class or an import.
    counts = _module_bindings(tree)
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name.split(".")[0]) for a in node.names]
        else:
            continue
        out.update(n for n in names if counts.get(n) == 1)
    return out


def _rebinds_globals(tree: ast.Module) -> bool:
    # A `global` statement anywhere: a module name may be rebound from inside a function.
    return any(isinstance(n, ast.Global) for n in ast.walk(tree))


def _constant_call(tree: ast.Module, factory: str) -> bool:
    # Every call of the factory in the file passes constants (or names bound once to a constant).
    counts = _module_bindings(tree)
    constants = {
        t.id for s in tree.body if isinstance(s, ast.Assign) and _is_constant(s.value)
        for t in s.targets if isinstance(t, ast.Name) and counts.get(t.id) == 1
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == factory:
            for arg in (*node.args, *(k.value for k in node.keywords)):
                if not (_is_constant(arg) or (isinstance(arg, ast.Name) and arg.id in constants)):
                    return False
    return True


def _is_constant(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Tuple):
        return all(_is_constant(e) for e in node.elts)
    return False


def _factory_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    # `f = make_f(...)` in the loop around a recorded call of f, for a factory that only makes the def.
    for site in recorded_sites(anchors, edit):
        made = factory_edits(anchors.reader, anchors.definition, site)
        if made is not None:
            yield made[1]


def candidate(ctx: FunctionContext, definition: DefInfo, sites: list[str], merged: State) -> Candidate | None:
    """The factory called once before its loop, where one recorded call site calls it again on every pass."""
    made = factory_edits(ctx.reader, definition, sites[0]) if len(sites) == 1 else None
    if made is None:
        return None
    name, edits = made
    return Candidate(
        "new-function-object",
        NAME,
        f"call {definition.outer}() once, before the loop that called it again for {name} at "
        f"{sites[0]}: it only makes the tf.function {definition.name}, and every pass passed it the same "
        "arguments",
        f"# {edits[1].span.path}:{edits[1].span.line}: before the loop\n{edits[1].text.rstrip()}",
        edits,
        merged,
    )


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the factory only makes the tf.function and is called with constants; safe only where the def's "
        "module reads cannot change between passes (a class attribute the loop anneals can) and no `del` "
        "removes the name",
    ),
    check=move(_factory_once, "the factory called once before its loop"),
    derive=_factory_once,
    row=Row(
        "safe when checked",
        "the factory only makes the tf.function and is called with constants; the def's module reads "
        "cannot change (a class attribute the loop anneals can); no `del`",
        "`p02_factory_class_attr.py` (item 2)",
    ),
    position=40,
)
