"""Why moving code out of a loop or a function could change what a program computes: the move kinds' checks.

A tf.function's Python body runs only while it traces. A def, a ``tf.function(f)``, a factory call,
a pipeline or a ``vectorized_map`` made anew on every pass traces on every pass, and so reads
module state afresh each time; made once, it traces once and every pass computes with what the
first trace read. A move is therefore safe only where nothing it freezes can change between
passes, and where nothing in the loop removes or changes what was moved. Each function here
returns the reason a move is unsafe, or None where the conditions hold.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tfretrace.fix.core.source import Replacement, SourceReader

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def frozen_reads(tree: ast.Module, function: _FunctionNode) -> str | None:
    """Why tracing ``function`` once could freeze module state a pass changes, or None.

    Safe reads: its own names and parameters, builtins, imports, module constants bound once to a
    literal, module defs whose own reads are safe (followed), module classes whose attributes the
    file never assigns. Anything else (a dict, a list, a name bound by a loop or rebound, a
    ``global`` statement in the file, ``setattr``) may differ between passes.
    """
    if any(isinstance(n, ast.Global) for n in ast.walk(tree)):
        return "the file rebinds module names with `global`: a function traced once keeps the values of its first trace"
    return _reads(tree, function, set())


def _reads(tree: ast.Module, function: _FunctionNode, seen: set[str]) -> str | None:
    local = _local_names(function)
    for node in ast.walk(function):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load) or node.id in local:
            continue
        bindings = module_bindings(tree, node.id)
        if not bindings:
            continue  # a builtin
        reason = _binding_risk(tree, node.id, bindings, seen)
        if reason is not None:
            return reason
    return None


def _binding_risk(tree: ast.Module, name: str, bindings: list[ast.stmt], seen: set[str]) -> str | None:
    if all(isinstance(b, (ast.Import, ast.ImportFrom)) for b in bindings):
        return None
    if len(bindings) > 1:
        return f"it reads the module name {name}, bound {len(bindings)} times: traced once, it keeps the first value"
    (binding,) = bindings
    if isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if name in seen:
            return None
        seen.add(name)
        inner = _reads(tree, binding, seen)
        return None if inner is None else f"{name}(), which it calls: {inner}"
    if isinstance(binding, ast.ClassDef):
        assigned = _class_attributes_assigned(tree, name)
        return None if assigned is None else (
            f"it reads the class {name}, whose attribute {assigned} the program assigns: traced once, "
            "it keeps the value of the first trace"
        )
    if isinstance(binding, ast.Assign) and not isinstance(binding.value, (ast.Dict, ast.List, ast.Set)) and (
        _constant(binding.value) or _variable(binding.value) or isinstance(binding.value, ast.Call)
    ) and not _mutated(tree, name):
        # A constant; a tf.Variable (a graph reads its value when it runs); an object built once
        # (a model) that the file never changes in place: the same at every trace.
        return None
    return (
        f"it reads the module name {name} (line {binding.lineno}), which a pass can change: traced once, "
        "every pass computes with the value of the first trace"
    )


def _constant(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.Tuple):
        return all(_constant(e) for e in node.elts)
    return False


def _variable(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Variable"


# Methods that change a dict, list or set in place.
_MUTATING = frozenset({
    "update", "append", "extend", "insert", "pop", "popitem", "clear", "setdefault", "remove", "add", "discard",
    "__setitem__", "__setattr__", "sort", "reverse",
})


def _mutated(tree: ast.Module, name: str) -> bool:
    # An attribute or item stored on it, setattr(name, ...), a mutating method called on it, or
    # the object passed to a def of this file (a helper may change it): it changes in place.
    helpers = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _MUTATING and isinstance(func.value, ast.Name) \
                    and func.value.id == name:
                return True
            if isinstance(func, ast.Name) and func.id in helpers and any(
                isinstance(a, ast.Name) and a.id == name for a in (*node.args, *(k.value for k in node.keywords))
            ):
                return True
        stored = isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del))
        if stored and isinstance(node.value, ast.Name) and node.value.id == name:  # type: ignore[attr-defined]
            return True
        if _setattr_of(node, name):
            return True
    return False


def _setattr_of(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr")
        and bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id == name
    )


def _class_attributes_assigned(tree: ast.Module, name: str) -> str | None:
    for node in ast.walk(tree):
        stored = isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
        if stored and isinstance(node.value, ast.Name) and node.value.id == name:  # type: ignore[attr-defined]
            return f"{name}.{node.attr}"  # type: ignore[attr-defined]
        if _setattr_of(node, name):
            return f"{name}.* (setattr)"
    return None


def module_bindings(tree: ast.Module, name: str) -> list[ast.stmt]:
    """Module-level statements that bind ``name`` (inside if/for/while/with/try too, not inside defs)."""
    found: list[ast.stmt] = []
    for statement in _module_statements(tree.body):
        if name in _bound_by(statement):
            found.append(statement)
    return found


def _module_statements(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_statements(getattr(statement, field, []) or [])
        for handler in getattr(statement, "handlers", []) or []:
            yield from _module_statements(handler.body)


def _bound_by(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in statement.items if i.optional_vars is not None]
    elif isinstance(statement, ast.Delete):
        targets = list(statement.targets)
    return {name for t in targets for name in _target_names(t)}


def _target_names(target: ast.expr) -> set[str]:
    # The names a target binds: `a`, `a, b`, `*rest`; never `d` of `d[k] = ...` or `obj.x = ...`.
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for e in target.elts for name in _target_names(e)}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _local_names(function: _FunctionNode) -> set[str]:
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def deleted_in(scope: ast.AST, names: Iterable[str]) -> str | None:
    """A ``del name`` in the loop (or function) a statement moves out of: the moved name is gone on the next pass."""
    wanted = set(names)
    for node in ast.walk(scope):
        if isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in wanted:
                    return (
                        f"`del {target.id}` at line {node.lineno} removes it on every pass: made once before the "
                        "loop, it would be gone on the second pass (NameError)"
                    )
    return None


def move_scope(reader: SourceReader, edits: tuple[Replacement, ...]) -> tuple[ast.Module, ast.AST, ast.stmt] | None:
    """The module, the loop or def a move leaves, and the statement it moves (found from its edits)."""
    removals = [e for e in edits if not e.text]
    if len(removals) != 1:
        return None
    span = removals[0].span
    parsed = reader.module(span.path)
    if parsed is None:
        return None
    tree = parsed[1]
    moved = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.stmt) and (n.lineno, n.col_offset) == (span.line, span.col)),
        None,
    )
    if moved is None:
        return None
    scopes = [
        n for n in ast.walk(tree)
        if isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef))
        and n is not moved and any(s is moved for s in ast.walk(n))
    ]
    # The innermost scope holding the moved statement.
    scope = max(scopes, key=lambda n: n.lineno, default=None)
    return (tree, scope, moved) if scope is not None else None


def names_bound(statement: ast.stmt) -> set[str]:
    """The names a moved statement binds."""
    return _bound_by(statement)


def module_def(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level def of ``name`` when it is the name's only module binding."""
    bindings = module_bindings(tree, name)
    if len(bindings) == 1 and isinstance(bindings[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return bindings[0]
    return None
