"""Python's scopes read from source: which names a def binds, reads and closes over, and where they are bound."""

from __future__ import annotations

import ast
import builtins

_Def = (ast.FunctionDef, ast.AsyncFunctionDef)


def def_chain(tree: ast.Module, node: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The defs enclosing ``node``, outermost first, where only defs enclose it (no class between)."""
    def visit(at: ast.AST, chain: list[ast.AST]) -> list[ast.AST] | None:
        for child in ast.iter_child_nodes(at):
            if child is node:
                return chain
            scoped = isinstance(child, (*_Def, ast.ClassDef, ast.Lambda))
            found = visit(child, [*chain, child] if scoped else chain)
            if found is not None:
                return found
        return None

    found = visit(tree, [])
    if found is None or not all(isinstance(n, _Def) for n in found):
        return None
    return [n for n in found if isinstance(n, _Def)]


def own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of ``function``'s own scope: not those inside a def, class, lambda or comprehension it holds."""
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, (*_Def, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            # Its name (a def, a class) is bound here; its defaults and decorators are evaluated here too,
            # which the own-scope reads below do not need: names bound are what matter.
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def scope_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every name ``function`` binds in its own scope: parameters, assignments, defs, classes, imports, handlers."""
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in own_nodes(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (*_Def, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def free_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every name the def (its body, defaults, decorators and nested scopes) reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def binds_besides(middle: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.AST) -> bool:
    """``node``'s name bound in ``middle`` by anything but ``node`` itself (a second def, an assignment)."""
    name = node.name if isinstance(node, (*_Def, ast.ClassDef)) else None
    for sub in own_nodes(middle):
        if sub is node:
            continue
        if isinstance(sub, (*_Def, ast.ClassDef)) and sub.name == name:
            return True
        if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, (ast.Store, ast.Del)):
            return True
    args = middle.args
    return name in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def declares(function: ast.AST, name: str) -> bool:
    """Whether ``function`` (or a def in it) declares ``name`` global or nonlocal."""
    return any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in ast.walk(function))


def read_outside(grand: ast.AST, middle: ast.AST, name: str) -> bool:
    """``name`` read in ``grand`` (its own scope or a def it holds) anywhere but inside ``middle``."""
    inside = {id(n) for n in ast.walk(middle)}
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in inside
        for n in ast.walk(grand)
    )


def evaluated_where_defined(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names the def's decorators, defaults and annotations read: evaluated where the def statement runs."""
    args = node.args
    parts: list[ast.AST] = [*node.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None)]
    parts += [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.annotation is not None]
    if node.returns is not None:
        parts.append(node.returns)
    return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}


def module_names(tree: ast.Module) -> set[str]:
    """The names the module binds at its own level (imports, defs, classes, assignments), and the builtins."""
    return {n for n in {x.id for x in ast.walk(tree) if isinstance(x, ast.Name)} if bound_at_module(tree, n)} | set(
        dir(builtins)
    )


def multiline_string(node: ast.AST) -> bool:
    """Whether a string literal (or f-string) in ``node`` spans lines: re-indenting the def would change its text."""
    return any(
        isinstance(n, (ast.Constant, ast.JoinedStr)) and (not isinstance(n, ast.Constant) or isinstance(n.value, str))
        and (n.end_lineno or n.lineno) != n.lineno
        for n in ast.walk(node)
    )


def bound_at_module(tree: ast.Module, name: str) -> bool:
    """Whether a statement at the module's own level binds ``name`` (an import, a def, a class, an assignment)."""
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name == name:
            return True
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.split(".")[0]) == name for a in statement.names
        ):
            return True
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # names bound inside a def or class are theirs, not the module's
        if any(isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id == name
               for sub in ast.walk(statement)):
            return True
    return False
