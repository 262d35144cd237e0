"""A dict key the function only multiplies by (a mask): filled with ones where a call leaves it out.

``f({"values": v})`` next to ``f({"values": v, "mask": m})`` is two structures, two traces. Where
the body does nothing with the key but ``x = x * d["mask"]`` under ``if "mask" in d:`` (no
``else``), ``x`` being ``d["values"]`` of the same shape and a real dtype, a call passing
``"mask": tf.ones_like(v)`` computes exactly what it computed without the key (``x * 1`` is ``x``),
and every call has one structure. Anything else the body does with the key keeps the advice.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import replace

from tfretrace.events import TENSOR, Leaf
from tfretrace.fix.anchor_base import Anchors, span_of
from tfretrace.fix.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.predict import Call
from tfretrace.fix.source import Replacement, Span
from tfretrace.fix.specs import is_top

# Multiplying by one is exact in these (not in complex types: inf * 0 in the cross terms is nan).
_REAL = frozenset({"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
                   "uint8", "uint16", "uint32", "uint64"})


def neutral_keys(ctx: FunctionContext, state: State) -> list[Candidate]:
    """Fill a mask key some calls leave out with ``tf.ones_like(<the values it multiplies>)`` at those calls."""
    node = None if ctx.definition is None else ctx.definition.node
    if node is None:
        return []
    out = []
    calls = state.replay.calls
    for path in varying_paths(calls, "dict"):
        found = _missing_key(calls, path) if is_top(path) else None
        if found is None or not _only_multiplies(node, path, *found):
            continue
        key, partner = found
        edits = _edits(ctx, calls, path, key, partner)
        if edits is None:
            continue
        new: dict[int, Call | None] = {
            c.index: _filled(c, path, key, partner) for c in calls if _key_leaf(c, path, key) is None
        }
        out.append(Candidate(
            "structure-changed",
            "neutral-key",
            f"pass {path}[{key!r}] on every call: the calls without it pass tf.ones_like({path}[{partner!r}]), "
            f"which the body only multiplies {path}[{partner!r}] by (the same values, one structure)",
            "\n".join(f"# {e.span.path}:{e.span.line}: the dict passed as {path}\n{e.text}" for e in edits),
            edits,
            state.map_calls(new),
        ))
    return out


def _keys(call: Call, path: str) -> dict[str, Leaf] | None:
    # The dict's entries by key, or None unless every entry is a tensor straight under the dict.
    out: dict[str, Leaf] = {}
    for leaf in call.signature:
        if not leaf.path.startswith(path + "["):
            continue
        rest = leaf.path[len(path):]
        try:
            key = ast.literal_eval(rest[1:-1]) if rest.count("[") == 1 and rest.endswith("]") else None
        except (ValueError, SyntaxError):
            key = None
        if not isinstance(key, str) or leaf.kind != TENSOR:
            return None
        out[key] = leaf
    return out


def _key_leaf(call: Call, path: str, key: str) -> Leaf | None:
    return (_keys(call, path) or {}).get(key)


def _missing_key(calls: tuple[Call, ...], path: str) -> tuple[str, str] | None:
    """The one key some calls lack, and a key every call has with that key's dtype and shape."""
    per_call = [_keys(c, path) for c in calls]
    if any(k is None for k in per_call):
        return None
    entries = [k for k in per_call if k is not None]
    every = set.intersection(*(set(k) for k in entries))
    missing = set.union(*(set(k) for k in entries)) - every
    if len(missing) != 1:
        return None
    key = next(iter(missing))
    for partner in sorted(every):
        if all(
            e[key].dtype in _REAL and (e[key].dtype, e[key].shape) == (e[partner].dtype, e[partner].shape)
            for e in entries if key in e
        ):
            return key, partner
    return None


def _filled(call: Call, path: str, key: str, partner: str) -> Call:
    # The call as it is once it passes the key: the partner's leaf again under the key's path.
    leaves = list(call.signature)
    entries = _keys(call, path) or {}
    last = max(i for i, leaf in enumerate(leaves) if leaf.path == path or leaf.path.startswith(path + "["))
    leaves.insert(last + 1, replace(entries[partner], path=f"{path}[{key!r}]"))
    head = next(i for i, leaf in enumerate(leaves) if leaf.path == path)
    leaves[head] = replace(leaves[head], value=f"with keys {[*entries, key]!r}")
    return replace(call, signature=tuple(leaves))


def _is_item(node: ast.AST | None, param: str, key: str) -> bool:
    return (
        isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == param
        and isinstance(node.slice, ast.Constant) and node.slice.value == key
    )


def _only_multiplies(fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str, key: str, partner: str) -> bool:
    """The body reads ``param`` only as ``param["..."]``, and ``param[key]`` only in ``x = x * param[key]``.

    Each such statement sits in an ``if key in param:`` with no ``else``; ``x`` is only ever bound
    to ``param[partner]`` or to itself times ``param[key]``; ``param`` is never rebound.
    """
    parents = {id(child): parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}
    scaled: set[str] = set()
    for statement in ast.walk(fn):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and _is_item(statement.value, param, partner):
                scaled.add(target.id)
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == param]
    for name in uses:
        parent = parents.get(id(name))
        if not isinstance(name.ctx, ast.Load):
            return False
        if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant) and isinstance(
            parent.slice.value, str
        ):
            if parent.slice.value == key and not _multiplied(parent, parents, key, param, scaled):
                return False
            continue
        if not _guard(parent, parents, key):
            return False
    return bool(scaled) and all(_binds_ok(fn, x, param, key, partner) for x in scaled)


def _multiplied(item: ast.AST, parents: dict[int, ast.AST], key: str, param: str, scaled: set[str]) -> bool:
    # ``x = x * d[key]``, ``x = d[key] * x`` or ``x *= d[key]``, inside ``if key in d:`` (no else).
    op = parents.get(id(item))
    if isinstance(op, ast.AugAssign):
        statement: ast.AST | None = op
        ok = isinstance(op.op, ast.Mult) and isinstance(op.target, ast.Name) and op.target.id in scaled
    elif isinstance(op, ast.BinOp) and isinstance(op.op, ast.Mult):
        other = op.right if op.left is item else op.left
        statement = parents.get(id(op))
        ok = (
            isinstance(other, ast.Name) and other.id in scaled and isinstance(statement, ast.Assign)
            and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == other.id
        )
    else:
        return False
    guard = parents.get(id(statement))
    return ok and isinstance(guard, ast.If) and not guard.orelse and _is_guard(guard.test, key, param)


def _guard(compare: ast.AST | None, parents: dict[int, ast.AST], key: str) -> bool:
    # ``key in d`` as the whole test of an ``if`` with no ``else``.
    guard = parents.get(id(compare)) if compare is not None else None
    return (
        isinstance(compare, ast.Compare) and isinstance(guard, ast.If) and guard.test is compare and not guard.orelse
        and isinstance(compare.comparators[0], ast.Name) and _is_guard(compare, key, compare.comparators[0].id)
    )


def _is_guard(test: ast.expr, key: str, param: str) -> bool:
    return (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)
        and isinstance(test.left, ast.Constant) and test.left.value == key
        and isinstance(test.comparators[0], ast.Name) and test.comparators[0].id == param
    )


def _binds_ok(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, param: str, key: str, partner: str) -> bool:
    # Every binding of ``name``: ``name = param[partner]``, ``name = name * param[key]`` or ``name *= param[key]``.
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            continue  # judged through its statement below
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            if not (isinstance(node.op, ast.Mult) and _is_item(node.value, param, key)):
                return False
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if isinstance(node, ast.With):
                targets = [item.optional_vars for item in node.items]
            bound = {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
            if name not in bound:
                continue
            value = getattr(node, "value", None)
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                return False
            if _is_item(value, param, partner):
                continue
            if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) and {
                _side(value.left, name, param, key), _side(value.right, name, param, key)
            } == {"self", "key"}):
                return False
    return True


def _side(node: ast.expr, name: str, param: str, key: str) -> str:
    if isinstance(node, ast.Name) and node.id == name:
        return "self"
    return "key" if _is_item(node, param, key) else "other"


def _edits(
    ctx: FunctionContext, calls: tuple[Call, ...], param: str, key: str, partner: str
) -> tuple[Replacement, ...] | None:
    """The key added to the dict literal of every call site that leaves it out; None if one cannot be."""
    lacking = {c.site for c in calls if _key_leaf(c, param, key) is None}
    edits = []
    for site in ctx.all_sites(calls):
        info = ctx.call_info(site)
        found = None if info is None else info.arg(param)
        literal = None if found is None else _dict_literal(ctx.reader.module(site.rpartition(":")[0]), found[2])
        if literal is None:
            if site in lacking or site not in {c.site for c in calls}:
                return None  # a call that may leave the key out, in a form tfretrace cannot edit
            continue
        keys = [k.value for k in literal.keys if isinstance(k, ast.Constant)]
        if key in keys:
            continue
        values = dict(zip(keys, literal.values, strict=False))
        source = values.get(partner)
        alias = ctx.reader.tf_alias(site.rpartition(":")[0])
        if len(keys) != len(literal.keys) or not isinstance(source, ast.Name) or alias is None or found is None:
            return None
        text = ctx.reader.text(found[2])
        edits.append(Replacement(found[2], with_key(text, key, f"{alias}.ones_like({source.id})")))
    return tuple(edits) or None


def _dict_literal(parsed: tuple[str, ast.Module] | None, span: Span) -> ast.Dict | None:
    # The dict display written at ``span``, with string keys only (no ``**other``).
    if parsed is None:
        return None
    for node in ast.walk(parsed[1]):
        if (isinstance(node, ast.Dict) and span_of(node, span.path) == span
                and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys)):
            return node
    return None


def with_key(text: str, key: str, value: str) -> str:
    """The dict display ``text`` with ``"key": value`` written last, its layout kept."""
    body = text.rstrip()[:-1].rstrip()
    comma = "" if body.endswith(("{", ",")) else ","
    return f"{body}{comma} {json.dumps(key)}: {value}}}" if body != "{" else f"{{{json.dumps(key)}: {value}}}"


def neutral_key_dict(anchors: Anchors, edit: Replacement) -> str | None:
    """A dict passed to the function, written again with one recorded key set to ``tf.ones_like(<entry>)``."""
    span = edit.span
    passed = [a for a in anchors.call_arguments(span.path) if isinstance(a, ast.Dict)]
    literal = next((d for d in passed if span_of(d, span.path) == span), None)
    if literal is None or _dict_literal(anchors.reader.module(span.path), span) is None:
        return "not a dict of string keys passed to the function"
    alias = anchors.alias(span.path) or "tf"
    text = anchors.reader.text(span)
    names = [v.id for v in literal.values if isinstance(v, ast.Name)]
    keys = [k.value for k in literal.keys if isinstance(k, ast.Constant)]
    allowed = {with_key(text, k, f"{alias}.ones_like({n})") for n in names for k in _all_keys(anchors, keys)}
    return None if edit.text in allowed else "the new text is not the dict with a key filled with ones_like of an entry"


def _all_keys(anchors: Anchors, have: Sequence[object]) -> set[str]:
    # The keys some recorded call passed in this dict and this literal lacks.
    found: set[str] = set()
    for event in anchors.report.events:
        for leaf in event.signature:
            rest = leaf.path.partition("[")[2]
            try:
                key = ast.literal_eval(rest[:-1]) if rest.endswith("]") and "[" not in rest else None
            except (ValueError, SyntaxError):
                key = None
            if isinstance(key, str) and key not in have:
                found.add(key)
    return found
