"""Where a tf.function is in a parsed module: the file's name for tensorflow, a def at a line, what it closes over."""

from __future__ import annotations

import ast


def tf_alias_of(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tensorflow":
                    return alias.asname or "tensorflow"
    # `tf = pytest.importorskip("tensorflow")`, `tf = importlib.import_module("tensorflow")`: a
    # module-level name bound to the module by a call that names it.
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and _imports_tensorflow(stmt.value)):
            return stmt.targets[0].id
    return None


def _imports_tensorflow(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call) or not value.args:
        return False
    name = (callee_name(value.func) or "").rpartition(".")[2]
    first = value.args[0]
    return (name in ("importorskip", "import_module", "__import__") and isinstance(first, ast.Constant)
            and first.value == "tensorflow")


def is_tf_function(node: ast.expr, alias: str | None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "function"
        and isinstance(node.value, ast.Name)
        and node.value.id == alias
    ) or (isinstance(node, ast.Name) and node.id == "function")


Defn = ast.FunctionDef | ast.AsyncFunctionDef


def find_def(tree: ast.Module, line: int, short: str) -> tuple[Defn, list[ast.AST]] | None:
    def visit(node: ast.AST, parents: list[ast.AST]) -> tuple[Defn, list[ast.AST]] | None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                if line in (first, child.lineno) and child.name == short:
                    return child, parents
            scoped = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            found = visit(child, [*parents, child] if scoped else parents)
            if found is not None:
                return found
        return None

    return visit(tree, [])


def closes_over(inner: Defn, outer: ast.AST | None) -> tuple[str, ...]:
    if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ()
    local = {a.arg for a in (*outer.args.posonlyargs, *outer.args.args, *outer.args.kwonlyargs)}
    for node in ast.walk(outer):
        if node is inner:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    own = {a.arg for a in (*inner.args.posonlyargs, *inner.args.args, *inner.args.kwonlyargs)}
    own |= {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return tuple(sorted((used & local) - own - {inner.name}))


def callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def root_name(func: ast.expr) -> str | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def spans_line(node: ast.AST, line: int) -> bool:
    """Whether a statement or expression node covers a source line."""
    first = getattr(node, "lineno", None)
    return first is not None and first <= line <= (getattr(node, "end_lineno", None) or first)
