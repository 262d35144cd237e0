"""Fix kind hoist-object: an argument keyed by identity, made anew on each pass of a loop, made once before it."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import replace

from tfretrace.fix.core import move_checks
from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.anchor_moves import move
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.hoist import made_once
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement, SourceReader
from tfretrace.records.events import OBJECT

NAME = "hoist-object"


def same_object(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A new object per call keyed by identity: create it once and pass the same one."""
    out = []
    calls = state.replay.calls
    paths = []
    for call in calls:
        for leaf in call.signature:
            if leaf.kind == OBJECT and leaf.path not in paths:
                paths.append(leaf.path)
    for path in paths:
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path and leaf.kind == OBJECT]
        if len({leaf.ident for leaf in leaves}) < 2:
            continue
        first = leaves[0]
        module = dict(first.extra).get("module", "")
        new = {
            c.index: replace(
                c,
                signature=tuple(
                    replace(leaf, ident=first.ident, alive=True) if leaf.path == path and leaf.kind == OBJECT else leaf
                    for leaf in c.signature
                ),
            )
            for c in calls
        }
        if module.split(".")[0] in ("keras", "tensorflow", "tf_keras"):
            summary = (
                f"{path} is a new {first.type_name} per call, keyed by identity: build it once and pass "
                "the same object (or capture it instead of passing it)"
            )
        else:
            summary = (
                f"{path} is a new {first.type_name} object per call, keyed by identity: create it once "
                "and pass the same object, or make it a NamedTuple (compared by value)"
            )
        moved = object_once(ctx, calls, path)
        if moved is not None:
            # A config object of a plain class made in the loop around the call: made once before it.
            out.append(Candidate(
                "object-identity", NAME,
                f"{path} is a new {first.type_name} per call, keyed by identity: make it once, before the loop",
                f"# {moved[1].span.path}:{moved[1].span.line}: before the loop\n{moved[1].text.rstrip()}",
                moved, state.map_calls(dict(new)),
            ))
            continue
        out.append(Candidate("object-identity", "advice", summary, None, (), state.map_calls(dict(new))))
    return out


def object_edits(reader: SourceReader, site: str, name: str) -> tuple[Replacement, Replacement] | None:
    """``name = Config(...)`` made in the loop around the call at ``site``, moved before that loop.

    Only for a class of the same file whose ``__init__`` does nothing but store its arguments on
    ``self`` (making it once cannot skip a side effect), built from constants and names the loop
    does not bind, where the loop neither rebinds ``name`` nor sets an attribute of it or calls a
    method on it: every pass then passes one equal object, and TensorFlow keys it by identity.
    """
    return made_once(reader, site, name, lambda tree, func: _pure_class(tree, func))


def object_once(
    ctx: FunctionContext, calls: tuple[Call, ...], param: str
) -> tuple[Replacement, Replacement] | None:
    """``object_edits`` for the object one recorded call site passes as ``param`` (a plain name)."""
    # One recorded call site passing a plain name for the parameter, bound in the loop around it.
    sites = ctx.sites(calls)
    info = ctx.call_info(sites[0]) if len(sites) == 1 else None
    found = None if info is None else info.arg(param)
    if found is None or not found[1].isidentifier():
        return None
    return object_edits(ctx.reader, sites[0], found[1])


def _pure_class(tree: ast.Module, name: str) -> bool:
    # A module-level class whose __init__ only stores its parameters (or constants) on self.
    cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == name), None)
    if cls is None or cls.bases or cls.decorator_list:
        return False
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return False
    params = {a.arg for a in (*init.args.args, *init.args.kwonlyargs)}
    for statement in init.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if not (
            isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Attribute)
            and isinstance(statement.targets[0].value, ast.Name) and statement.targets[0].value.id == "self"
            and (isinstance(statement.value, ast.Constant)
                 or (isinstance(statement.value, ast.Name) and statement.value.id in params))
        ):
            return False
    return True


def _object_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    # A plain name passed to a call of the function, made in the loop around that call.
    tree = anchors.tree(edit.span.path)
    if tree is None:
        return
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _calls(node, anchors.names)):
            continue
        for value in (*node.args, *(k.value for k in node.keywords)):
            if isinstance(value, ast.Name):
                moved = object_edits(anchors.reader, f"{edit.span.path}:{node.lineno}", value.id)
                if moved is not None:
                    yield moved


def _calls(node: ast.Call, names: tuple[str, ...]) -> bool:
    func = node.func
    return (isinstance(func, ast.Name) and func.id in names) or (
        isinstance(func, ast.Attribute) and func.attr in names
    )


def conditions(scope: ast.AST, moved: ast.stmt, names: tuple[str, ...]) -> str | None:
    """Why the object made once could change results (None: it cannot): the loop must only pass it to the function."""
    (bound,) = move_checks.names_bound(moved) or {""}
    return only_passed_to(scope, bound, names)


def only_passed_to(scope: ast.AST, name: str, callees: Iterable[str]) -> str | None:
    """Why an object made once could change between passes: the loop uses it other than as ``callees``' argument."""
    allowed = set(callees)
    passed: set[int] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and callee_name(node.func) in allowed:
            passed.update(id(a) for a in node.args)
            passed.update(id(k.value) for k in node.keywords)
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and id(node) not in passed:
            return (
                f"the loop uses {name} at line {node.lineno} other than as the function's argument (a helper or "
                "setattr may change it): made once, the changes would carry over to the next pass"
            )
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the class's __init__ only stores constant arguments; safe only where the loop uses the object "
        "only as the function's argument (no helper, method call or setattr changes it) and never deletes it",
    ),
    check=move(_object_once, "the object made once before its loop"),
    derive=_object_once,
    row=Row(
        "safe when checked",
        "the class's `__init__` only stores constant arguments; the loop uses the object only as the "
        "function's argument (no helper, method call or `setattr` changes it) and never deletes it",
        "`p03_object_helper.py`, `p03b_object_setattr.py` (item 3)",
    ),
    move_conditions=lambda site: conditions(site.scope, site.moved, site.names),
    position=50,
    makers=(Maker(same_object, 100),),
)
