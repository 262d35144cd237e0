"""Fix kind neutral-key: a dict key the function only multiplies by (a mask), filled with ones where a call lacks it.

``f({"values": v})`` next to ``f({"values": v, "mask": m})`` is two structures, two traces. Where
the body does nothing with the key but ``x = x * d["mask"]`` under ``if "mask" in d:`` (no
``else``), ``x`` being ``d["values"]`` of the same shape and a real dtype, a call passing
``"mask": tf.ones_like(v)`` computes exactly what it computed without the key (``x * 1`` is ``x``),
and every call has one structure. Anything else the body does with the key keeps the advice.
"""

from __future__ import annotations

import ast
import json
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors, span_of
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, first_config, varying_paths
from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.predict import Call, calls_of
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement, Span
from tfretrace.fix.core.specs import is_top
from tfretrace.records.events import TENSOR, Leaf

NAME = "neutral-key"


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
            NAME,
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


Body = ast.FunctionDef | ast.AsyncFunctionDef


def _only_multiplies(fn: Body, param: str, key: str, partner: str) -> bool:
    """The body uses ``param[key]`` only to multiply a copy of ``param[partner]`` by it, under ``if key in param``.

    At the top level of the body: ``x = param[partner]``, later one or more ``if key in param:``
    (no ``else``) whose whole body is ``x = x * param[key]`` (or ``x *= ...``) statements. ``x``
    is bound nowhere else, ``param`` is read nowhere else but by constant keys, and the body has
    no nested function, class or comprehension (no second scope where a name could mean another).
    """
    if any(isinstance(n, (*_SCOPES, ast.comprehension)) and n is not fn for n in ast.walk(fn)):
        return False
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} - {param}
    first: dict[str, int] = {}  # x -> index of its ``x = param[partner]`` in the body
    allowed: set[int] = set()  # ids of the statements allowed to bind x or read param[key]
    guards: set[int] = set()  # ids of the guard tests (the only other reads of param)
    for index, statement in enumerate(fn.body):
        target = _partner_copy(statement, param, partner)
        if target is not None and target not in first and target not in params:
            first[target] = index
            allowed.add(id(statement))
            continue
        if isinstance(statement, ast.If) and _is_guard(statement.test, key, param) and not statement.orelse:
            scaled = [_scaled_name(s, param, key) for s in statement.body]
            if not all(x is not None and first.get(x, index) < index for x in scaled):
                return False
            allowed.update(id(s) for s in statement.body)
            guards.add(id(statement.test))
    if not guards:
        return False
    return _nothing_else(fn, param, key, set(first), allowed, guards)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _partner_copy(statement: ast.stmt, param: str, partner: str) -> str | None:
    # ``x = param[partner]``: x's name.
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and _is_item(statement.value, param, partner):
        target = statement.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    return None


def _scaled_name(statement: ast.stmt, param: str, key: str) -> str | None:
    # ``x = x * param[key]``, ``x = param[key] * x`` or ``x *= param[key]``: x's name.
    if isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Mult):
        aug = statement.target
        return aug.id if isinstance(aug, ast.Name) and _is_item(statement.value, param, key) else None
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    value = statement.value
    if not (isinstance(target, ast.Name) and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)):
        return None
    sides = [value.left, value.right]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == target.id]
    items = [s for s in sides if _is_item(s, param, key)]
    return target.id if len(names) == 1 and len(items) == 1 else None


def _nothing_else(fn: Body, param: str, key: str, scaled: set[str], allowed: set[int], guards: set[int]) -> bool:
    # Every binding of a scaled name and every read of param[key] is in an allowed statement; param
    # is only read by constant keys or by a guard, and never bound.
    parents = {id(child): parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}

    def statement_of(node: ast.AST) -> ast.AST | None:
        while node is not None and not isinstance(node, ast.stmt):
            node = parents.get(id(node))  # type: ignore[assignment]
        return node

    for node in ast.walk(fn):
        binds = isinstance(node, ast.Name) and node.id in scaled and not isinstance(node.ctx, ast.Load)
        if binds and id(statement_of(node)) not in allowed:
            return False
        if isinstance(node, ast.Name) and node.id == param:
            parent = parents.get(id(node))
            if not isinstance(node.ctx, ast.Load):
                return False
            if id(parent) in guards:
                continue
            if not (isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant)
                    and isinstance(parent.slice.value, str)):
                return False
            if parent.slice.value == key and id(statement_of(parent)) not in allowed:
                return False
    return True


def _is_guard(test: ast.expr, key: str, param: str) -> bool:
    return (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)
        and isinstance(test.left, ast.Constant) and test.left.value == key
        and isinstance(test.comparators[0], ast.Name) and test.comparators[0].id == param
    )


def _edits(
    ctx: FunctionContext, calls: tuple[Call, ...], param: str, key: str, partner: str
) -> tuple[Replacement, ...] | None:
    """The key added to the dict literal of every call site that leaves it out; None if one cannot be."""
    lacking = {c.site for c in calls if _key_leaf(c, param, key) is None}
    edits = []
    for site in ctx.all_sites(calls):
        if _calls_on_line(ctx, site) != 1:
            return None  # which of them a recorded call was cannot be told
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


def _calls_on_line(ctx: FunctionContext, site: str) -> int:
    path, _, line = site.rpartition(":")
    parsed = ctx.reader.module(path)
    if parsed is None or not line.isdigit():
        return 0
    names = set(ctx.names)
    return sum(
        1 for n in ast.walk(parsed[1])
        if isinstance(n, ast.Call) and n.lineno == int(line) and callee_name(n.func) in names
    )


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
    """One of the dicts tfretrace itself writes for this function, derived again from the file as it is now."""
    report, definition = anchors.report, anchors.definition
    ctx = FunctionContext(report, anchors.reader, definition, report.name.rsplit(".", 1)[-1])
    state = State(calls_of(report), first_config(report, definition))
    if any(edit in c.edits for c in neutral_keys(ctx, state)):
        return None
    return "not the dict with a mask key tfretrace fills for this function"


def dict_keys(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A dict that sometimes lacks a key: always pass every key (advice: what to pass is the user's call)."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, "dict"):
        heads = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        if any(h.kind != "dict" for h in heads):
            continue
        widest = max(calls, key=lambda c: sum(1 for leaf in c.signature if leaf.path.startswith(path + "[")))
        full = tuple(leaf for leaf in widest.signature if leaf.path == path or leaf.path.startswith(path + "["))
        keys = [leaf.path[len(path) :] for leaf in full if leaf.path.count("[") == path.count("[") + 1]
        new = {}
        for c in calls:
            have = {leaf.path for leaf in c.signature}
            if all(leaf.path in have for leaf in full):
                continue
            rest = [leaf for leaf in c.signature if not (leaf.path == path or leaf.path.startswith(path + "["))]
            at = next(i for i, leaf in enumerate(c.signature) if leaf.path == path)
            new[c.index] = replace(c, signature=(*rest[:at], *full, *rest[at:]))
        if not new:
            continue
        moved = state.map_calls(dict(new))
        out.append(
            Candidate(
                "structure-changed",
                "advice",
                f"always pass {path} with the same keys ({', '.join(keys)}): a key present on some calls and "
                "absent on others is a new structure; pass a neutral value (e.g. an all-ones mask) instead",
                None,
                (),
                replace(moved, signature_advice=True),
            )
        )
    return out


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the key's entry is ones of the recorded dtype and shape, and the body's only use of it is "
        "`x = x * d[key]` under `if key in d`: multiplying by ones gives the same values",
    ),
    check=neutral_key_dict,
    row=Row(
        "safe",
        "the key's entry is ones of the recorded dtype and shape, and the body's only use of it is `x = x"
        " * d[key]` under `if key in d`: multiplying by ones gives the same values",
    ),
    not_a_move=True,
    position=10,
    makers=(Maker(neutral_keys, 50, call_sites=True), Maker(dict_keys, 60, call_sites=True)),
)
