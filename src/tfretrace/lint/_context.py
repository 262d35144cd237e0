"""The tree walk: tracks loops, function scopes and tf.function bodies, and calls the rules."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from tfretrace.lint._module import COMPREHENSIONS, FUNCS, LEAF_TYPES, LOOPS, SKIP_FIELDS, ModuleInfo
from tfretrace.lint._names import bound_names, dotted
from tfretrace.lint.findings import CONFIRMED

# Decorator attributes of web frameworks (Flask, FastAPI, aiohttp...): the function runs per request.
_ROUTE_ATTRS = frozenset({"route", "get", "post", "put", "patch", "delete", "api_route", "websocket"})
_HANDLER_NAMES = frozenset({"do_GET", "do_POST", "do_PUT", "lambda_handler", "handler", "handle"})
# Functions that run once per object or per program even when called from a loop.
_SETUP_NAMES = frozenset({"__init__", "__post_init__", "build", "setup", "setUp", "main"})
_SETUP_PREFIXES = ("make_", "build_", "create_", "_make_", "_build_", "_create_", "get_", "_get_")
_COUNTER_SOURCES = frozenset({"range", "trange", "count"})


class Scope:
    """Names one scope (function, lambda, comprehension, or loop body) binds, computed on demand.

    Most nodes never need them: only a name that is also an import alias must be checked for
    shadowing, so the walk over the scope's body is deferred until then.
    """

    __slots__ = ("_args", "_body", "_names")

    def __init__(
        self,
        body: Iterable[ast.AST] = (),
        args: ast.arguments | None = None,
        names: Iterable[str] | None = None,
    ) -> None:
        self._body = body
        self._args = args
        self._names: frozenset[str] | None = None if names is None else frozenset(names)

    @property
    def names(self) -> frozenset[str]:
        """Every name the scope binds."""
        if self._names is None:
            self._names = frozenset(bound_names(self._body, self._args))  # type: ignore[arg-type]
        return self._names


class ScopeChain:
    """A container view over nested scopes: ``name in chain`` asks the innermost first."""

    __slots__ = ("scopes",)

    def __init__(self, scopes: tuple[Scope, ...] = ()) -> None:
        self.scopes = scopes

    def __contains__(self, name: object) -> bool:
        return any(name in scope.names for scope in self.scopes)

    def __add__(self, scope: Scope) -> ScopeChain:
        return ScopeChain((scope, *self.scopes))


class Ctx:
    """Where a node sits: enclosing function, loops and tf.function body. Treated as immutable."""

    __slots__ = (
        "counters",
        "eager",
        "func",
        "guarded",
        "in_loop",
        "info",
        "loop_names",
        "loop_node",
        "maybe_counters",
        "shadows",
        "stepped",
        "tf_def",
        "tf_locals",
    )

    def __init__(self, info: ModuleInfo) -> None:
        self.info = info
        # Names bound by the enclosing function scopes: they are not the imported modules.
        self.shadows = ScopeChain()
        self.func: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.in_loop = False
        self.loop_node: ast.AST | None = None
        # Loop targets and names assigned inside the enclosing loops of this function.
        self.loop_names = ScopeChain()
        # Python int loop counters (`for i in range(...)`, enumerate's index, `n += 1` in while).
        self.counters: frozenset[str] = frozenset()
        # Counters of a `while <tensor test>:` in a plain function: Python ints when the function
        # runs eagerly, tensors when a tf.function calls it (AutoGraph converts the loop).
        self.maybe_counters: frozenset[str] = frozenset()
        # The counters that are Python numbers stepped each iteration (``lr *= 0.9``), not counts.
        self.stepped: frozenset[str] = frozenset()
        # The tf.function whose body this node is traced as part of, and its own local names.
        self.tf_def: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.tf_locals = ScopeChain()
        # Inside an if/try/loop of the tf.function body: code that may not run on every trace.
        self.guarded = False
        # Inside `with tf.init_scope():` in a tf.function: that block runs eagerly, not in the graph.
        self.eager = False

    def derive(self, **changes: object) -> Ctx:
        """A copy with some fields changed."""
        new = Ctx.__new__(Ctx)
        for slot in Ctx.__slots__:
            setattr(new, slot, changes.get(slot, getattr(self, slot)))
        return new

    def resolve(self, node: ast.expr, wanted: Callable[[str], bool] | None = None) -> str | None:
        """Canonical dotted name of ``node`` in this scope, or None.

        With ``wanted``, names it rejects give None before the shadowing check, which needs the
        scope's bound names and is by far the costliest part.
        """
        imports = self.info.imports
        name = imports.resolve(node)
        if name is None or (wanted is not None and not wanted(name)):
            return None
        return imports.resolve(node, self.shadows)

    @property
    def params(self) -> frozenset[str]:
        """Parameter names of the enclosing function."""
        return frozenset(bound_names((), self.func.args)) if self.func is not None else frozenset()

    def depends_on_loop(self, node: ast.AST) -> bool:
        """True when ``node`` mentions a loop target or a name assigned inside the loop."""
        names = self.loop_names
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


# (node, detail) or (node, detail, confidence): confidence is "confirmed" unless a rule says less.
Finding = tuple[ast.AST, str] | tuple[ast.AST, str, str]
Check = Callable[[ast.AST, Ctx], Iterator[Finding]]
Emit = Callable[[str, ast.AST, str, str], None]


def is_handler(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """True for a web route handler, a request handler method or a Keras per-batch or per-epoch callback."""
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in _ROUTE_ATTRS:
            return True
    name = func.name
    # Keras callbacks: on_train_batch_end per batch, on_epoch_end per epoch.
    return name in _HANDLER_NAMES or (name.startswith("on_") and ("batch" in name or "epoch" in name))


def per_call(func: ast.FunctionDef | ast.AsyncFunctionDef, info: ModuleInfo) -> bool:
    """True when ``func`` runs per batch or per request (handler, or called in a loop here)."""
    if is_handler(func):
        return True
    name = func.name
    if name in _SETUP_NAMES or name.startswith(_SETUP_PREFIXES):
        return False
    return name in info.loop_called


def _counters(loop: ast.AST) -> set[str]:
    """Names that hold a Python int counter in this loop."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        it, target = loop.iter, loop.target
        if not isinstance(it, ast.Call):
            return set()
        parts = dotted(it.func)
        # `for x in tf.range(n)` yields tensors, not Python ints: only plain range(), trange(),
        # itertools.count() and friends count here, never a method of a tensor library.
        if parts and len(parts) > 1 and parts[0] not in ("itertools", "tqdm"):
            return set()
        name = parts[-1] if parts else ""
        if name == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
            first = target.elts[0]
            return {first.id} if isinstance(first, ast.Name) else set()
        inner = it.args[0] if it.args and isinstance(it.args[0], ast.Call) else None
        if inner is not None:  # tqdm(range(n))
            inner_parts = dotted(inner.func)
            if inner_parts and len(inner_parts) > 1 and inner_parts[0] != "itertools":
                return set()  # tqdm(tf.range(n)): tensors again
            name = inner_parts[-1] if inner_parts else name
        if name in _COUNTER_SOURCES and isinstance(target, ast.Name):
            return {target.id}
        return set()
    found: set[str] = set()
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.AugAssign)
                and isinstance(node.op, ast.Add)
                and isinstance(node.target, ast.Name)
            ):
                found.add(node.target.id)
    return found


_STEP_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)


def stepped(loop: ast.AST) -> set[str]:
    """Names a loop's body steps by a Python number each iteration: ``lr *= 0.9``, ``lr = lr * 0.9``.

    Such a name holds a new Python number per iteration (a decayed learning rate), which a
    tf.function keys by value: one trace per iteration, like a loop counter.
    """
    found: set[str] = set()
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if (isinstance(node, ast.AugAssign) and isinstance(node.op, _STEP_OPS)
                    and isinstance(node.target, ast.Name) and _number(node.value)):
                found.add(node.target.id)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, _STEP_OPS)):
                name, sides = node.targets[0].id, (node.value.left, node.value.right)
                if any(isinstance(x, ast.Name) and x.id == name for x in sides) and any(_number(x) for x in sides):
                    found.add(name)
    return found


def decayed(loop: ast.AST, counters: frozenset[str] | set[str], constants: frozenset[str]) -> set[str]:
    """Names a loop's body sets to arithmetic of a loop counter: ``lr = BASE_LR * 0.7 ** epoch``.

    Only number literals, module-level number constants and counters, at least one counter: the
    name holds a new Python number each iteration (a learning-rate schedule), one trace each.
    """
    found: set[str] = set()
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.BinOp)
                    and _counter_arithmetic(node.value, frozenset(counters), constants)):
                found.add(node.targets[0].id)
    return found


def _counter_arithmetic(node: ast.expr, counters: frozenset[str], constants: frozenset[str]) -> bool:
    """Arithmetic of numbers, number constants and counters that mentions a counter."""
    leaves: list[ast.expr] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.BinOp) and isinstance(item.op, _STEP_OPS):
            stack.extend((item.left, item.right))
        elif isinstance(item, ast.UnaryOp) and isinstance(item.op, (ast.USub, ast.UAdd)):
            stack.append(item.operand)
        else:
            leaves.append(item)
    names = [leaf.id for leaf in leaves if isinstance(leaf, ast.Name)]
    if not any(n in counters for n in names):
        return False
    return all(_number(leaf) or (isinstance(leaf, ast.Name) and (leaf.id in counters or leaf.id in constants))
               for leaf in leaves)


def _number(node: ast.expr) -> bool:
    """A literal int or float (``0.9``, ``-1``): the step keeps the name a Python number."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def tensor_test(loop: ast.AST) -> bool:
    """``while tf.norm(x) > t:``: a tf.while_loop under AutoGraph, whose counters are tensors."""
    test = getattr(loop, "test", None)
    return test is not None and any(
        isinstance(n, ast.Call) and (dotted(n.func) or [""])[0] in ("tf", "tensorflow") for n in ast.walk(test)
    )


# Per node type, the fields that can hold child nodes: names, operators and `ctx` (Load/Store)
# never matter, and Name and Constant have no children worth visiting (half the tree's nodes).
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
_LEAVES = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.cmpop, ast.unaryop)
_LEAF_TYPES = LEAF_TYPES
_SKIP = SKIP_FIELDS | {"simple", "rest", "kwd_attrs"}
# Nodes that change the context their children run in: see Walker._visit_structure.
_STRUCTURE = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp,
     ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.ClassDef, ast.With, ast.AsyncWith, ast.If, ast.Try,
     ast.IfExp, ast.BoolOp, ast.Match, *([ast.TryStar] if hasattr(ast, "TryStar") else [])}
)


def _fields(kind: type[ast.AST]) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _SKIP)
    return fields


def _children(node: ast.AST) -> Iterator[ast.AST]:
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST) and not isinstance(item, _LEAVES):
                    yield item
        elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
            yield value


def _init_scope(node: ast.With | ast.AsyncWith, ctx: Ctx) -> bool:
    """True for ``with tf.init_scope():`` (also under an import alias)."""
    return any(
        isinstance(item.context_expr, ast.Call)
        and (ctx.resolve(item.context_expr.func) or "").endswith("init_scope")
        and (ctx.resolve(item.context_expr.func) or "").startswith("tensorflow")
        for item in node.items
    )


class Walker:
    """Walks one module once, running each registered check on the nodes of its types."""

    def __init__(self, checks: dict[type[ast.AST], list[tuple[str, Check]]], emit: Emit) -> None:
        self.checks = checks
        self.emit = emit

    def run(self, tree: ast.Module, info: ModuleInfo) -> None:
        """Walk ``tree``; findings go to ``emit``."""
        self.visit(tree, Ctx(info))

    def visit(self, node: ast.AST, ctx: Ctx) -> None:
        """Check one node, then its children with the context they run in."""
        kind = type(node)
        checks = self.checks.get(kind)
        if checks is not None:
            for code, check in checks:
                for found in check(node, ctx):
                    self.emit(code, found[0], found[1], found[2] if len(found) == 3 else CONFIRMED)
        if kind in _STRUCTURE:
            self._visit_structure(node, ctx)
            return
        if kind is ast.Attribute:  # `tf.keras.layers.Dense`: no call below a plain dotted name
            value = node.value  # type: ignore[attr-defined]
            while type(value) is ast.Attribute:
                value = value.value
            if type(value) is ast.Name:
                return
        # The common case, inlined: this loop runs once per node of every file.
        visit = self.visit
        leaves = _LEAF_TYPES
        for name in _FIELDS.get(kind) or _fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) not in leaves and isinstance(item, ast.AST):
                        visit(item, ctx)
            elif type(value) not in leaves and isinstance(value, ast.AST):
                visit(value, ctx)

    def _visit_structure(self, node: ast.AST, ctx: Ctx) -> None:
        if isinstance(node, FUNCS):
            self._visit_function(node, ctx)
        elif isinstance(node, LOOPS):
            self._visit_loop(node, ctx)
        elif isinstance(node, COMPREHENSIONS):
            self._visit_comprehension(node, ctx)
        elif isinstance(node, ast.Lambda):
            scope = Scope((), node.args)
            inner = ctx.derive(shadows=ctx.shadows + scope, tf_def=None, in_loop=False)
            self.visit(node.body, inner)
        elif isinstance(node, ast.ClassDef):
            inner = ctx.derive(tf_def=None, in_loop=False)
            for child in _children(node):
                self.visit(child, inner)
        elif ctx.tf_def is not None and isinstance(node, (ast.With, ast.AsyncWith)) and _init_scope(node, ctx):
            for child in _children(node):
                self.visit(child, ctx.derive(eager=True))
        elif ctx.tf_def is not None and not ctx.guarded and isinstance(
            node, (ast.If, ast.Try, ast.IfExp, ast.BoolOp, ast.Match)
        ):
            guarded = ctx.derive(guarded=True)
            for child in _children(node):
                self.visit(child, guarded)
        else:
            for child in _children(node):
                self.visit(child, ctx)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Ctx) -> None:
        for deco in node.decorator_list:
            self.visit(deco, ctx)
        self.visit(node.args, ctx)
        if node.returns is not None:
            self.visit(node.returns, ctx)
        info = ctx.info
        local = Scope(node.body, node.args)
        is_tf = node.name in info.wrapped_defs or any(
            info.is_tf_function(d) for d in node.decorator_list
        )
        inner = ctx.derive(
            shadows=ctx.shadows + local,
            func=node,
            in_loop=False,
            loop_node=None,
            loop_names=ScopeChain(),
            counters=frozenset(),
            maybe_counters=frozenset(),
            stepped=frozenset(),
            tf_def=node if is_tf else None,
            tf_locals=ScopeChain((local,)) if is_tf else ScopeChain(),
            guarded=False,
        )
        for stmt in node.body:
            self.visit(stmt, inner)

    def _visit_loop(self, node: ast.For | ast.AsyncFor | ast.While, ctx: Ctx) -> None:
        if isinstance(node, ast.While):
            head: list[ast.AST] = []
            body: list[ast.AST] = [node.test, *node.body]
        else:
            head = [node.iter]
            body = [node.target, *node.body]
        # The target is stored like an assignment, so bound_names finds its names too.
        counters, maybe, steps = ctx.counters, ctx.maybe_counters, ctx.stepped
        if not tensor_test(node):
            steps = steps | stepped(node)
            counters = counters | _counters(node) | steps
            # `lr = BASE_LR * 0.7 ** epoch`: a new Python number per iteration, like the counter.
            derived = decayed(node, counters, ctx.info.number_constants)
            steps, counters = steps | derived, counters | derived
        elif ctx.tf_def is None and not (ctx.func is not None and ctx.func.name in ctx.info.traced_calls):
            # Only a traced body's loop is converted: at module level, or in a function no
            # tf.function here calls, the loop runs in Python and its counter is an int.
            if ctx.func is None:
                counters = counters | _counters(node)
            else:
                maybe = maybe | _counters(node)
        inner = ctx.derive(
            in_loop=True,
            loop_node=node,
            loop_names=ctx.loop_names + Scope(body),
            counters=counters,
            maybe_counters=maybe,
            stepped=steps,
            guarded=ctx.guarded or ctx.tf_def is not None,
        )
        for child in head:
            self.visit(child, ctx)
        for child in body:
            self.visit(child, inner)
        for child in node.orelse:
            self.visit(child, ctx)

    def _visit_comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, ctx: Ctx
    ) -> None:
        gens = node.generators
        targets: set[str] = set()
        for gen in gens:
            targets |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        scope = Scope(names=targets)
        inner = ctx.derive(
            in_loop=True,
            loop_node=node,
            shadows=ctx.shadows + scope,
            loop_names=ctx.loop_names + scope,
            guarded=ctx.guarded or ctx.tf_def is not None,
        )
        self.visit(gens[0].iter, ctx)
        rest: list[ast.AST] = [gens[0].target, *gens[0].ifs, *gens[1:]]
        if isinstance(node, ast.DictComp):
            rest += [node.key, node.value]
        else:
            rest.append(node.elt)
        for child in rest:
            self.visit(child, inner)
