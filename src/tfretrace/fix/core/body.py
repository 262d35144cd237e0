"""What a traced function's body does with a parameter: Python-only uses, control flow, assignments."""

from __future__ import annotations

import ast
from collections.abc import Collection

from tfretrace.fix.core.defs import callee_name, root_name

# Calls that need a Python value and break on a symbolic tensor inside a graph.
_PYTHON_ONLY_CALLS = frozenset({"int", "float", "bool", "str", "len", "list", "tuple", "print", "format"})
_PYTHON_ONLY_MODULES = frozenset({"np", "numpy", "math", "random"})


def unsafe_uses(node: ast.AST, param: str) -> list[str]:
    """Uses of ``param`` in a body that need a Python value (they break if it becomes a tensor)."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = callee_name(sub.func)
            root = root_name(sub.func)
            uses = any(_mentions(arg, param) for arg in (*sub.args, *(k.value for k in sub.keywords)))
            if not uses:
                continue
            if isinstance(sub.func, ast.Name) and name in _PYTHON_ONLY_CALLS:
                found.append(f"{name}({param})")
            elif root in _PYTHON_ONLY_MODULES:
                found.append(f"{root}.{name}(...{param}...)")
            elif name == "constant":
                found.append(f"tf.constant(...{param}...)")
        elif isinstance(sub, ast.comprehension) and _mentions(sub.iter, param):
            found.append(f"a comprehension over {param}")
        elif isinstance(sub, ast.Subscript) and _mentions(sub.slice, param):
            found.append(f"indexing with {param}")
        elif isinstance(sub, ast.JoinedStr) and _mentions(sub, param):
            found.append(f"an f-string of {param}")
        elif (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == param
            and sub.attr in ("append", "extend", "pop", "items", "keys", "values")
        ):
            found.append(f"{param}.{sub.attr}")
    return found


def assigns_to(node: ast.AST, param: str) -> bool:
    """True when the body assigns to the variable ``param`` (``param.assign(...)``, ``scatter_*``)."""
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == param
            and (sub.attr.startswith("assign") or sub.attr.startswith("scatter"))
        ):
            return True
    return False


def steers_control_flow(node: ast.AST, param: str) -> bool:
    """True when ``param`` appears in an if/while test or a range() bound: a tensor there changes the graph."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.If, ast.While, ast.IfExp)) and _mentions(sub.test, param):
            return True
        if (
            isinstance(sub, ast.Call)
            and callee_name(sub.func) == "range"
            and any(_mentions(a, param) for a in sub.args)
        ):
            return True
    return False


def assigns_zeros_when_none(node: ast.AST, param: str) -> bool:
    """True when the body itself starts ``param`` at zeros when None (``if s is None: s = tf.zeros(...)``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.If) and _is_none_test(sub.test, param):
            for stmt in sub.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == param for t in stmt.targets)
                    and isinstance(stmt.value, ast.Call)
                    and callee_name(stmt.value.func) in ("zeros", "zeros_like")
                ):
                    return True
    return False


def _is_none_test(test: ast.expr, param: str) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == param
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(sub, ast.Name) and sub.id == name for sub in ast.walk(node))


# Keyword arguments that TensorFlow wants as int64 (tf.summary's step, the optimizer's iterations).
_INT64_KEYWORDS = frozenset({"step", "global_step"})


def number_dtype(node: ast.AST, param: str) -> str:
    """The tensor dtype a Python int ``param`` must become to fit every use in the body.

    int32 (tf.constant's default) unless the body passes it where TensorFlow wants int64: a
    ``tf.summary`` step (``step=param`` or a summary call's third argument) or ``tf.cast(param, tf.int64)``.
    """
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        if any(k.arg in _INT64_KEYWORDS and _mentions(k.value, param) for k in sub.keywords):
            return "int64"
        func = sub.func
        in_summary = (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == "summary"
        )
        if in_summary and len(sub.args) >= 3 and _mentions(sub.args[2], param):
            return "int64"
    return "int32"


def reads_static_size(
    node: ast.AST, param: str, leading_only: bool = False, rank: int | None = None, dims: Collection[int] | None = None,
) -> bool:
    """True when the body reads a size of ``param`` as a Python number (``param.shape[i]``, ``len(param)``).

    ``leading_only``: only its leading size counts; ``param.shape[1]`` (a literal index past 0) reads another
    dimension, which a signature that opens only the leading one keeps as it was. ``dims``: only those
    dimensions count (the ones a signature opens). ``rank``: the tensor's rank, so that ``x.shape[-1]`` is
    known to read the last dimension (without it a negative index may be any, and counts).
    """
    wanted = {0} if leading_only else (None if dims is None else set(dims))
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.value, ast.Attribute)
            and sub.value.attr == "shape"
            and isinstance(sub.value.value, ast.Name)
            and sub.value.value.id == param
        ):
            index = _constant_index(sub.slice)
            if index is not None and index < 0 and rank is not None:
                index += rank
            if wanted is not None and index is not None and index >= 0 and index not in wanted:
                continue
            return True
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id == "len"
            and any(isinstance(a, ast.Name) and a.id == param for a in sub.args)
            and (wanted is None or 0 in wanted)
        ):
            return True
    return False


def constant_calls(node: ast.AST, param: str, tf: str, dtype: str) -> list[ast.Call] | None:
    """The ``tf.constant(...)`` calls of the body that mention ``param``, when each can become ``tf.convert_to_tensor``.

    ``tf.constant`` refuses a symbolic tensor; ``tf.convert_to_tensor`` gives the same tensor for a
    Python value and passes a tensor (or a list holding one) through. Only a call with the value
    alone, or with ``dtype=`` naming the ``dtype`` the call site will pass, is the same after
    the change; None when some call is not.
    """
    found = []
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Call) and callee_name(sub.func) == "constant" and root_name(sub.func) == tf):
            continue
        if not any(_mentions(arg, param) for arg in (*sub.args, *(k.value for k in sub.keywords))):
            continue
        named = {k.arg: k.value for k in sub.keywords}
        given = named.get("dtype")
        same_dtype = given is None or (
            isinstance(given, ast.Attribute) and given.attr == dtype and root_name(given) == tf
        )
        if len(sub.args) != 1 or set(named) - {"dtype"} or not same_dtype or not _mentions(sub.args[0], param):
            return None
        found.append(sub)
    return found


def python_if(node: ast.AST, param: str) -> bool:
    """True when a Python if/while tests ``param``: it decides the graph's structure.

    On a tensor, autograph would make it a tf.cond/while_loop whose branches must then agree on
    what they produce: not a change tfretrace makes by itself.
    """
    return any(
        isinstance(sub, (ast.If, ast.While, ast.IfExp)) and _mentions(sub.test, param) for sub in ast.walk(node)
    )


def random_draw(node: ast.AST) -> str | None:
    """The first call in the body that draws from a stateful random stream (``tf.random.normal``), or None.

    Each trace gets its own random op, with its own stream (and a NumPy or Python draw runs once
    per trace): fewer traces draw other numbers. Stateless ops and ``tf.random.Generator`` methods
    keep their state outside the graph and are not affected.
    """
    for inner in ast.walk(node):
        if not isinstance(inner, ast.Call):
            continue
        dotted = ast.unparse(inner.func)
        head, _, last = dotted.rpartition(".")
        if last.startswith("stateless") or not head:
            continue
        if head == "random" or head.endswith(".random") or dotted.endswith("nn.dropout"):
            return dotted
    return None


def host_draw(node: ast.AST) -> str | None:
    """The first NumPy or Python random draw in the body (run once per trace, seeded outside TensorFlow), or None."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            head = ast.unparse(inner.func).rpartition(".")[0]
            if head in ("random", "np.random", "numpy.random") or head.endswith(".default_rng()"):
                return ast.unparse(inner.func)
    return None


def size_reads(node: ast.AST, param: str) -> tuple[frozenset[int], bool]:
    """The dimensions of ``param`` the body reads as Python numbers, and whether some read's dimension is unknown.

    ``param.shape[1]`` reads dimension 1, ``len(param)`` dimension 0; ``param.shape`` used any
    other way (``param.shape.as_list()``, ``tuple(param.shape)``) may read any of them. Under a
    trace with that dimension open the number is None: the body computes something else or fails.
    """
    parents: dict[int, ast.AST] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    dims: set[int] = set()
    unknown = False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "len":
            if any(isinstance(a, ast.Name) and a.id == param for a in sub.args):
                dims.add(0)
            continue
        is_shape = (
            isinstance(sub, ast.Attribute)
            and sub.attr in ("shape", "get_shape")
            and isinstance(sub.value, ast.Name)
            and sub.value.id == param
        )
        if not is_shape:
            continue
        up = parents.get(id(sub))
        if isinstance(up, ast.Subscript) and up.value is sub:
            index = _constant_index(up.slice)
            if index is None:
                unknown = True
            else:
                dims.add(index)
        elif isinstance(up, ast.Attribute) and up.attr in ("rank", "ndims"):
            continue  # the rank is known under an open dimension
        else:
            unknown = True
    return frozenset(dims), unknown


def _constant_index(index: ast.expr) -> int | None:
    # ``2`` or ``-1``: a constant dimension; anything else (a slice, a name) is not known here.
    sign = 1
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        sign, index = -1, index.operand
    value = index.value if isinstance(index, ast.Constant) else None
    return sign * value if isinstance(value, int) and not isinstance(value, bool) else None


_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def trace_time_effect(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The first Python-side effect the body has at trace time (``print(...)``, ``log.append(...)``), or None.

    Python code in a tf.function body runs once per trace, not per call: fewer traces print less
    and append less. ``tf.print`` is an op and runs per call; a container the body made itself,
    or a parameter, is not the program's state.
    """
    local = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.comprehension)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            local.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    # A mutator counts as a statement of its own (``log.append(x)``): ``tf.add(a, b)`` is a value, and the
    # same name on a module is no container of the program's.
    statements = {id(sub.value) for sub in ast.walk(node) if isinstance(sub, ast.Expr)}
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        if isinstance(sub.func, ast.Name) and sub.func.id == "print":
            return "print(...)"
        func = sub.func
        outer = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id not in local
        if outer and isinstance(func, ast.Attribute) and func.attr in _MUTATORS and isinstance(func.value, ast.Name) \
                and id(sub) in statements:
            return f"{func.value.id}.{func.attr}(...)"
    return None
