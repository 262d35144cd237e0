"""Whole-module facts collected before the rules run: known tf.functions, models, loop calls."""

from __future__ import annotations

import ast

from tfretrace.lint._names import TF_FUNCTION, Imports, dotted

_MODEL_FACTORIES = frozenset(
    {"Sequential", "Model", "Functional", "clone_model", "model_from_json", "model_from_config"}
)
_MODEL_CALLS = frozenset({"load_model", "clone_model", "model_from_json", "model_from_config", "load"})
LOOPS = (ast.For, ast.AsyncFor, ast.While)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


# Fields that never hold a node the collection needs: names, operators, load/store contexts.
SKIP_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level",
                          "kind", "type_comment", "is_async", "conversion", "lineno", "col_offset"})
# Node types with nothing below them worth listing, looked up by exact type (no isinstance).
LEAF_TYPES = frozenset(
    {ast.Name, ast.Constant, ast.alias, type(None), str, int}
    | {sub for base in (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
       for sub in base.__subclasses__()}
)
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def inner_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` but names, constants, operators and aliases, in breadth-first order.

    ``ast.walk`` yields the same nodes and those leaves (half the tree) through two generators
    per node; this loop, with each node type's child fields looked up once, is several times
    faster, and the module facts need none of the leaves it leaves out.
    """
    out: list[ast.AST] = [tree]
    fields_of = _CHILD_FIELDS
    leaves = LEAF_TYPES
    append = out.append
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        kind = type(node)
        fields = fields_of.get(kind)
        if fields is None:
            fields = fields_of[kind] = tuple(f for f in kind._fields if f not in SKIP_FIELDS)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) not in leaves and isinstance(item, ast.AST):
                        append(item)
            elif type(value) not in leaves and isinstance(value, ast.AST):
                append(value)
    return out


def is_model_factory(qualname: str | None) -> bool:
    """True for a canonical name that builds a new Keras model (``keras.Sequential``, ...)."""
    if qualname is None or not qualname.startswith("keras."):
        return False
    last = qualname.rsplit(".", 1)[1]
    return last in _MODEL_FACTORIES or (
        qualname.startswith("keras.applications.") and last[:1].isupper()
    )


def is_model_loader(qualname: str | None) -> bool:
    """True for a canonical name that loads a model from disk."""
    if qualname is None:
        return False
    if qualname.startswith("keras.") and qualname.endswith(".load_model"):
        return True
    return qualname in {"tensorflow.saved_model.load", "keras.layers.TFSMLayer"}


class ModuleInfo:
    """Facts about one parsed module that rules look up by name."""

    def __init__(self, tree: ast.Module) -> None:
        # One walk serves the import table and every fact below.
        nodes = inner_nodes(tree)
        self.imports = Imports(tree, nodes)
        # Module-level names bound once, to a number literal (`BASE_LR = 0.1`): Python numbers.
        self.number_constants: frozenset[str] = _number_constants(tree)
        self._tree = tree
        self._factories: frozenset[str] | None = None
        # Names of plain functions known to be tf.functions, and `self.<attr>` ones.
        self.tf_function_names: set[str] = set()
        self.tf_function_attrs: set[str] = set()
        # Defs passed to tf.function(...) by name: their bodies are traced.
        self.wrapped_defs: set[str] = set()
        # Classes in this file that subclass a Keras model.
        self.model_classes: set[str] = set()
        # Names and `self.<attr>`s this file binds to a Keras model it builds, loads or defines.
        self.model_names: set[str] = set()
        self.model_attrs: set[str] = set()
        self._loops: list[ast.stmt] = []
        self._loop_called: set[str] | None = None
        self._traced: list[ast.AST] = []
        self._traced_calls: set[str] | None = None
        self._model_assigns: list[ast.Assign] = []
        self._collect(nodes)
        self._collect_models()

    @property
    def loop_called(self) -> set[str]:
        """Function names called inside some loop (``f(...)`` or ``obj.f(...)``), on demand."""
        if self._loop_called is None:
            called: set[str] = set()
            for loop in self._loops:
                for stmt in getattr(loop, "body", ()):
                    _collect_calls(stmt, called)
            self._loop_called = called
        return self._loop_called

    @property
    def traced_calls(self) -> set[str]:
        """Function names called inside the bodies of this file's tf.functions, on demand."""
        if self._traced_calls is None:
            called: set[str] = set()
            for func in self._traced:
                for stmt in getattr(func, "body", ()):
                    _collect_calls(stmt, called)
            self._traced_calls = called
        return self._traced_calls

    @property
    def tf_function_factories(self) -> frozenset[str]:
        """Module-level functions, undecorated (no cache), that create a tf.function and return it."""
        if self._factories is None:
            found = set()
            for func in self._tree.body:
                if not isinstance(func, FUNCS) or func.decorator_list:
                    continue
                created = {s.name for s in func.body if isinstance(s, FUNCS)
                           and any(self.is_tf_function(d) for d in s.decorator_list)}
                created |= {t.id for s in func.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                            and self.creation_target(s.value) is not None for t in s.targets if isinstance(t, ast.Name)}
                if any(isinstance(s, ast.Return) and isinstance(s.value, ast.Name) and s.value.id in created
                       for s in func.body):
                    found.add(func.name)
            self._factories = frozenset(found)
        return self._factories

    def is_tf_function(self, node: ast.expr) -> bool:
        """True for an expression naming tf.function itself (any alias), used bare or called."""
        if isinstance(node, ast.Call):
            node = node.func
        return self.imports.resolve(node) in TF_FUNCTION

    def creation_target(self, node: ast.Call) -> ast.expr | None:
        """For ``tf.function(g, ...)`` or ``tf.function(...)(g)``, return ``g``; else None."""
        func = node.func
        if isinstance(func, ast.Call) and self.is_tf_function(func.func) and node.args:
            return node.args[0]
        if self.imports.resolve(func) not in TF_FUNCTION:
            return None
        if node.args:
            return node.args[0]
        for kw in node.keywords:
            if kw.arg == "func":
                return kw.value
        return None

    def _collect(self, nodes: list[ast.AST]) -> None:
        imports = self.imports
        # Cheap pre-filter: only calls spelled `<x>.function(...)` or via a tf.function alias can
        # create a tf.function.
        direct = {k for k, v in imports.aliases.items() if v in TF_FUNCTION}
        for node in nodes:
            if isinstance(node, FUNCS):
                self._traced.append(node)  # kept only if traced: see the end of _collect
                if any(self.is_tf_function(d) for d in node.decorator_list):
                    self.tf_function_names.add(node.name)
                    self.tf_function_attrs.add(node.name)
            elif isinstance(node, ast.Call):
                func = node.func.func if isinstance(node.func, ast.Call) else node.func
                if not (
                    (isinstance(func, ast.Attribute) and func.attr == "function")
                    or (isinstance(func, ast.Name) and func.id in direct)
                ):
                    continue
                target = self.creation_target(node)
                if isinstance(target, ast.Name):
                    self.wrapped_defs.add(target.id)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                self._collect_assign(node)
            elif isinstance(node, ast.ClassDef):
                if any(is_model_factory(self.imports.resolve(b)) for b in node.bases):
                    self.model_classes.add(node.name)
            elif isinstance(node, LOOPS):
                self._loops.append(node)
        traced = self.tf_function_names | self.wrapped_defs
        self._traced = [f for f in self._traced if getattr(f, "name", None) in traced]

    def _collect_models(self) -> None:
        """Record the names assigned a model: ``m = keras.Sequential(...)``, ``load_model(p)``, ``Net()``."""
        for node in self._model_assigns:
            assert isinstance(node.value, ast.Call)
            func = node.value.func
            qualname = self.imports.resolve(func)
            if not (
                is_model_factory(qualname)
                or is_model_loader(qualname)
                or (isinstance(func, ast.Name) and func.id in self.model_classes)
            ):
                continue
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.model_names.add(t.id)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    self.model_attrs.add(t.attr)

    def _collect_assign(self, node: ast.Assign) -> None:
        assert isinstance(node.value, ast.Call)
        parts = dotted(node.value.func)
        if parts and (parts[-1][:1].isupper() or parts[-1] in _MODEL_CALLS):
            self._model_assigns.append(node)  # a model class, factory or loader: resolved later
        if self.creation_target(node.value) is None:
            return
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.tf_function_names.add(t.id)
            elif isinstance(t, ast.Attribute):
                self.tf_function_attrs.add(t.attr)


def _collect_calls(stmt: ast.stmt, into: set[str]) -> None:
    """Add the last name of every callee in ``stmt`` (``f`` for ``obj.f(...)``)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            parts = dotted(node.func)
            if parts is not None:
                into.add(parts[-1])


def _number_constants(tree: ast.Module) -> frozenset[str]:
    """Module-level names assigned exactly once in the file, at module level, to an int or float literal."""
    bound: dict[str, int] = {}
    literal: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    bound[name.id] = bound.get(name.id, 0) + 1
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value.operand if isinstance(stmt.value, ast.UnaryOp) else stmt.value
            if isinstance(value, ast.Constant) and type(value.value) in (int, float):
                literal.add(stmt.targets[0].id)
    return frozenset(n for n in literal if bound.get(n) == 1)
