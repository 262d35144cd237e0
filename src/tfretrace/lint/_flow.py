"""Loop data flow: which names hold data that changes from one iteration of a loop to the next."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfretrace.lint._module import COMPREHENSIONS, FUNCS
from tfretrace.lint._names import dotted

_GROWERS = frozenset({"append", "extend", "insert"})


def loop_targets(loop: ast.AST | None) -> set[str]:
    """Names a ``for`` loop or a comprehension binds as its target."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    if isinstance(loop, COMPREHENSIONS):
        return {n.id for g in loop.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    return set()


def _body_nodes(loop: ast.AST) -> Iterator[ast.AST]:
    """Every node of the loop's body, not entering functions or classes defined in it."""
    if isinstance(loop, ast.DictComp):
        stack: list[ast.AST] = [loop.key, loop.value]
    elif isinstance(loop, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        stack = [loop.elt]
    else:
        stack = list(getattr(loop, "body", ()))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FUNCS, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _stored(target: ast.expr) -> set[str]:
    """Names an assignment target writes: ``a, b`` -> both, ``x[0, i]`` -> ``x`` (changed in place)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for elt in target.elts for name in _stored(elt)}
    if isinstance(target, ast.Starred):
        return _stored(target.value)
    if isinstance(target, ast.Subscript):
        parts = dotted(target.value)
        return {parts[0]} if parts and len(parts) == 1 else set()
    return set()


def _writes(loop: ast.AST) -> list[tuple[set[str], ast.expr, bool]]:
    """(names written, the value or slice they are written from, a plain lookup) per assignment."""
    writes: list[tuple[set[str], ast.expr, bool]] = []
    for node in _body_nodes(loop):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                value: ast.expr = node.value
                if isinstance(target, ast.Subscript):  # x[0, idx] = 1: x changes with idx
                    value = ast.Tuple(elts=[target.slice, node.value], ctx=ast.Load())
                writes.append((_stored(target), value, isinstance(node.value, ast.Subscript)))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            writes.append((_stored(node.target), node.value, False))
    return writes


def _grown(loop: ast.AST, writes: list[tuple[set[str], ast.expr, bool]]) -> set[str]:
    """Names the loop grows step by step: ``seq.append(t)``, ``seq += [t]``, ``seq = concat(seq, t)``."""
    grown: set[str] = set()
    for node in _body_nodes(loop):
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _GROWERS and isinstance(node.func.value, ast.Name)
        ):
            grown.add(node.func.value.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            grown.add(node.target.id)
    for names, value, _lookup in writes:
        grown |= names & _names_in(value)  # seq = np.append(seq, t): the new value holds the old
    return grown


def _closure(seed: set[str], writes: list[tuple[set[str], ast.expr, bool]], keys: set[str]) -> set[str]:
    """``seed`` and every name written, directly or through others, from a name in it.

    ``d = table[key]`` with ``key`` a loop target that is not a counter picks one of a few named
    entries (a whole dataset per key), not the loop's next item: it does not carry the flow.
    """
    found = set(seed)
    changed = True
    while changed:
        changed = False
        for names, value, lookup in writes:
            if names <= found:
                continue
            used = _names_in(value)
            if lookup and isinstance(value, ast.Subscript):
                container = _names_in(value.value)
                if not container & found and not (_names_in(value.slice) & found) - keys:
                    continue
            if used & found:
                found |= names
                changed = True
    return found


def _outputs(loop: ast.AST, call: ast.Call) -> set[str]:
    """Names the loop body assigns from the result of ``call`` (``out, h = model.predict(x)``)."""
    return {
        name
        for node in _body_nodes(loop)
        if isinstance(node, ast.Assign) and any(n is call for n in ast.walk(node.value))
        for target in node.targets
        for name in _stored(target)
    }


def changes_per_step(data: ast.expr, loop: ast.AST | None, call: ast.Call, counters: frozenset[str]) -> bool:
    """True when ``data``, the input of ``call`` inside ``loop``, differs at each iteration.

    It does when it is (built from) what the loop walks: its target, a name filled from
    ``next(iterator)``, anything derived from those in the body (``image = load(line.split()[0])``);
    or a sequence the loop grows (``tokens.append(t)``, a decode loop); or what the call's own
    result feeds back (``states = [h, c]`` after ``out, h, c = model.predict(...)``).
    """
    if loop is None:
        return False
    targets = loop_targets(loop)
    writes = _writes(loop)
    fed = {
        name
        for names, value, _lookup in writes
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "next"
        for name in names
    }
    # A key that is not a counter (``for key in datasets``) names an entry, it does not walk items.
    keys = targets - counters
    items = _closure(targets | fed, writes, keys)
    stepped = items | _grown(loop, writes) | _closure(_outputs(loop, call), writes, set())
    return bool(_names_in(data) & stepped)
