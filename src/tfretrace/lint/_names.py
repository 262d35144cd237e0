"""Name resolution: imports and aliases to canonical dotted names, and local shadowing."""

from __future__ import annotations

import ast
from collections.abc import Container, Iterable

# Rewrites that make every spelling of the same API one canonical name, so that rules match
# `tf.keras.Model`, `keras.Model` and `tf_keras.Model` alike. Longest prefix first.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tensorflow.python.keras", "keras"),
    ("tensorflow.compat.v2.keras", "keras"),
    ("tensorflow.compat.v1.keras", "keras"),
    ("tensorflow.compat.v2", "tensorflow"),
    ("tensorflow.compat.v1", "tensorflow"),
    ("tensorflow.keras", "keras"),
    ("keras.api", "keras"),
    ("keras.src", "keras"),
    ("tf_keras", "keras"),
)

TF_FUNCTION: frozenset[str] = frozenset(
    {
        "tensorflow.function",
        "tensorflow.python.eager.def_function.function",
        "tensorflow.python.eager.polymorphic_function.polymorphic_function.function",
    }
)


_CANONICAL: dict[str, str] = {}


def canonical(name: str) -> str:
    """Map an import path to its canonical spelling (``tensorflow.keras.X`` -> ``keras.X``)."""
    known = _CANONICAL.get(name)
    if known is not None:
        return known
    result = name
    for prefix, repl in _PREFIXES:
        if name == prefix or name.startswith(prefix + "."):
            result = repl + name[len(prefix) :]
            break
    if len(_CANONICAL) < 100_000:  # names repeat across files; bounded for a huge run
        _CANONICAL[name] = result
    return result


def dotted(node: ast.expr) -> list[str] | None:
    """Return ``['tf', 'keras', 'Model']`` for ``tf.keras.Model``; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    return parts


def bound_names(body: Iterable[ast.stmt], args: ast.arguments | None = None) -> set[str]:
    """Names a scope binds itself (parameters, assignments, defs), not counting imports.

    Nested function and class bodies are not entered: their names are their own.
    """
    names: set[str] = set()
    if args is not None:
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                names.add(arg.arg)
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            # Decorators and defaults run in this scope; the body does not.
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names


class Imports:
    """The alias table of one module: local name -> canonical dotted name it was imported as.

    Imports anywhere in the file are collected (scripts often import inside ``main``); names
    that the module binds otherwise, and never imports, are shadows and resolve to nothing.
    """

    def __init__(self, tree: ast.Module, nodes: Iterable[ast.AST] | None = None) -> None:
        self.aliases: dict[str, str] = {}
        self._memo: dict[int, tuple[ast.expr, str, str | None]] = {}
        for node in ast.walk(tree) if nodes is None else nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = canonical(alias.name)
                    else:
                        # `import tensorflow.keras` binds `tensorflow`.
                        top = alias.name.split(".")[0]
                        self.aliases[top] = canonical(top)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    local = alias.asname or alias.name
                    self.aliases[local] = canonical(f"{node.module}.{alias.name}")
        self._tree = tree
        self._module_shadows: set[str] | None = None
        self.uses_tensorflow = any(
            q == "tensorflow" or q.startswith(("tensorflow.", "keras")) for q in self.aliases.values()
        )

    def resolve(self, node: ast.expr, local_shadows: Container[str] = frozenset()) -> str | None:
        """Canonical dotted name of an expression such as ``tf2.keras.Model``, or None.

        ``local_shadows`` are names bound by the enclosing function scopes (parameters,
        assignments): a parameter called ``tf`` is not TensorFlow.
        """
        # Rules ask about the same callee several times: the scope-free part is worked out once
        # per node (the memo keeps the node, so its id cannot be reused while the entry lives).
        memo = self._memo.get(id(node))
        if memo is None or memo[0] is not node:
            memo = self._memo[id(node)] = (node, *self._resolve(node))
        _node, base, name = memo
        # Only an imported name can resolve, so the (costlier) shadow check comes second.
        if name is None or base in local_shadows:
            return None
        return name

    def _resolve(self, node: ast.expr) -> tuple[str, str | None]:
        parts = dotted(node)
        if parts is None:
            return "", None
        base = parts[0]
        target = self.aliases.get(base)
        if target is None:
            return base, None
        return base, canonical(".".join([target, *parts[1:]]))

    @property
    def module_shadows(self) -> set[str]:
        """Names the module binds other than by import, on demand (only builtin checks need them)."""
        if self._module_shadows is None:
            self._module_shadows = bound_names(self._tree.body) - set(self.aliases)
        return self._module_shadows

    def is_builtin(self, name: str, local_shadows: Container[str]) -> bool:
        """True when ``name`` refers to the builtin of that name in this scope."""
        return (
            name not in local_shadows
            and name not in self.aliases
            and name not in self.module_shadows
        )
