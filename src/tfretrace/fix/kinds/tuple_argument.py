"""Fix kind tuple-argument: a literal list passed where other calls pass a tuple is written as that tuple.

TensorFlow keys a list and a tuple apart, so ``step([x, y])`` traces again beside the ``step((x, y))``
calls Keras' ``fit`` (or another line) makes, though the body only unpacks it. The list literal at
the call site becomes a tuple literal of the same elements; the calls then match the tuple's traces.
Safe only where TensorFlow ran each recorded trace that got the list beside a fresh trace given the
same elements as a tuple, to the same outputs bit for bit (a body that appends to the argument or
tests its type would differ); unasked, unsafe.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors, expression, span_of
from tfretrace.fix.core.call_edits import missing_note, preview, reached, swap_leaf
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.defs import callee_name
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.source import Replacement
from tfretrace.fix.core.specs import is_top

NAME = "tuple-argument"
_NEVER_SAFE = (
    "a list becomes a tuple: a body that appends to it, tests its type or hands it to code that does behaves "
    "otherwise (TensorFlow was not asked: no live function to run)"
)


def list_as_tuple(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A parameter some calls pass as a list and others as a tuple: the list literals written as tuples."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls):
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        tuples = [leaf for leaf in leaves if leaf.kind == "tuple"]
        if not is_top(path) or not tuples or {leaf.kind for leaf in leaves} != {"list", "tuple"}:
            continue
        listed = tuple(c for c in calls if any(leaf.path == path and leaf.kind == "list" for leaf in c.signature))
        edits, missing = _tuple_edits(ctx, listed, path)
        if not edits:
            continue
        by_length = {leaf.value: leaf for leaf in tuples}
        new = {}
        for call in listed:
            old = next(leaf for leaf in call.signature if leaf.path == path)
            tuple_leaf = by_length.get(old.value) or replace(old, kind="tuple", type_name="tuple")
            new[call.index] = replace(call, signature=swap_leaf(call.signature, path, tuple_leaf))
        # TensorFlow runs each recorded trace that got the list beside the trace with the tuple (runtime.probe).
        compared, differ = (0, None) if ctx.probe_as_tuple is None else ctx.probe_as_tuple(path)
        checked = TF_CHECKED if compared and differ is None else differ
        if checked not in (None, TF_CHECKED):
            checked = f"a list becomes a tuple, and the body tells them apart: {checked}"
        out.append(
            Candidate(
                "structure-changed",
                NAME,
                f"pass {path} as a tuple: a call writes it as a list where other calls pass a tuple, and "
                "TensorFlow keys the two apart" + missing_note(missing),
                preview(ctx, (), edits) or f"{ctx.short}(({path}...))",
                edits,
                state.map_calls(reached(new, listed, missing)),
                tf_check=checked,
                compared=compared if checked == TF_CHECKED else 0,
            )
        )
    return out


def _tuple_edits(ctx: FunctionContext, calls: tuple[Call, ...], path: str) -> tuple[tuple[Replacement, ...], list[str]]:
    """Each recorded call site's list literal for ``path`` as a tuple literal; the sites where it is not a literal."""
    edits: list[Replacement] = []
    missing: list[str] = []
    for site in ctx.sites(calls):
        info = ctx.call_info(site)
        found = None if info is None else info.arg(path)
        node = None if found is None else expression(found[1])
        if found is None or not isinstance(node, ast.List) or any(isinstance(e, ast.Starred) for e in node.elts):
            missing.append(site)
            continue
        elements = [ast.get_source_segment(found[1].strip(), e) or ast.unparse(e) for e in node.elts]
        text = "(" + ", ".join(elements) + ("," if len(elements) == 1 else "") + ")"
        if all(e.span != found[2] for e in edits):
            edits.append(Replacement(found[2], text))
    return tuple(edits), missing


def tuple_literal(anchors: Anchors, edit: Replacement) -> str | None:
    """A literal list passed to the function, at a call the run recorded, becomes a tuple literal of its elements."""
    path = edit.span.path
    tree = anchors.tree(path)
    recorded = {int(line) for e in anchors.report.events if e.call_site
                for where, _, line in [e.call_site.rpartition(":")] if where == path and line.isdigit()}
    found = None
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Call) or callee_name(node.func) not in anchors.names:
            continue
        # A top-level argument only (never an element of one), of a call whose lines the run recorded a call at:
        # another function of the same name (a method of another class) is not this one's to edit.
        lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for arg in [*node.args, *(k.value for k in node.keywords if k.arg is not None)]:
            if span_of(arg, path) == edit.span and lines & recorded:
                found = arg
    if not isinstance(found, ast.List):
        return f"not a list literal passed to {anchors.names[-1]} at a call the run recorded"
    new = expression(edit.text)
    if not isinstance(new, ast.Tuple) or [ast.dump(e) for e in new.elts] != [ast.dump(e) for e in found.elts]:
        return "the new text is not a tuple of the list's elements"
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        _NEVER_SAFE,
        "one structure for every call; safe where TensorFlow ran each recorded trace that got the list and the "
        "trace with the same elements as a tuple on the same inputs, to the same outputs bit for bit",
        probed=True,
    ),
    check=tuple_literal,
    row=Row(
        "safe when TensorFlow says so",
        "a list literal at a call site (`step([x, y])`) where other calls pass a tuple (Keras' `fit` calls "
        "`train_step` with one) becomes a tuple literal of the same elements: safe where TensorFlow ran each "
        "recorded trace that got the list beside the trace with the tuple to the same outputs bit for bit; "
        "otherwise unsafe (a body that appends to the argument or tests its type behaves otherwise)",
    ),
    position=155,
    makers=(Maker(list_as_tuple, 35, call_sites=True),),
)
