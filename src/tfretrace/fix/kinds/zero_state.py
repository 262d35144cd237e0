"""Fix kind zero-state: a None argument that later is a tensor starts as zeros instead; maker, anchors, class."""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors, dotted_name, expression, is_literal, span_of
from tfretrace.fix.core.body import assigns_zeros_when_none
from tfretrace.fix.core.call_edits import missing_note, reached, swap_leaf
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.source import Replacement
from tfretrace.fix.core.specs import is_top, shape_text
from tfretrace.records.events import PYTHON, TENSOR

NAME = "zero-state"
_NEVER_SAFE = (
    "None becomes zeros: where the body's None branch starts from something else (ones, a learned state) the "
    "results change"
)


def none_to_zeros(ctx: FunctionContext, state: State) -> list[Candidate]:
    """An argument that is None on the first call and a tensor later starts as a zero tensor instead."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, PYTHON):
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        nones = [leaf for leaf in leaves if leaf.kind == PYTHON and leaf.type_name == "NoneType"]
        tensors = [leaf for leaf in leaves if leaf.kind == TENSOR]
        if not is_top(path) or not nones or not tensors or len(nones) + len(tensors) != len(leaves):
            continue
        first = tensors[0]
        if first.shape is None or None in first.shape:
            out.append(
                Candidate(
                    "structure-changed",
                    "statement",
                    f"{path} is None on some calls and a tensor of shape {shape_text(first.shape)} on others: "
                    "a zero initial state needs a fully known shape",
                    None,
                )
            )
            continue
        template = f"{{tf}}.zeros({shape_text(first.shape)}, dtype={{tf}}.{first.dtype})"
        zeros = template.format(tf=ctx.tf)
        new = {
            c.index: replace(c, signature=swap_leaf(c.signature, path, first))
            for c in calls
            if any(leaf.path == path and leaf.kind == PYTHON for leaf in c.signature)
        }
        edits, missing = _zero_edits(ctx, calls, path, template)
        same = (
            ctx.definition is not None
            and ctx.definition.node is not None
            and assigns_zeros_when_none(ctx.definition.node, path)
        )
        # TensorFlow runs each recorded trace that got None beside the trace with the zeros the step
        # passes (runtime.probe): the same outputs bit for bit make the step safe, as its kind declares.
        compared, differ = (0, None) if ctx.probe_zeros is None or not edits else ctx.probe_zeros(
            path, tuple(int(d) for d in first.shape if d is not None), str(first.dtype)
        )
        checked = TF_CHECKED if compared and differ is None else differ
        caveat = f" (the same result only if {ctx.short} treats None as a zero state)"
        caveat = "" if same or checked == TF_CHECKED else caveat
        code = ctx.reader.preview(edits) or f"{path} = {zeros}"
        out.append(
            Candidate(
                "structure-changed",
                NAME,
                f"start {path} as a zero tensor of shape {shape_text(first.shape)} instead of None{caveat}"
                + missing_note(missing),
                code,
                edits,
                state.map_calls(reached(new, calls, missing)),
                tf_check=None if checked is None else _said(checked),
                compared=compared if checked == TF_CHECKED else 0,
            )
        )
    return out


def _said(checked: str) -> str:
    """TensorFlow's answer as the step's ``tf_check``: TF_CHECKED, or the kind's reason with what it ran."""
    if checked == TF_CHECKED:
        return checked
    return f"{_NEVER_SAFE}; {checked}"


def _zero_edits(
    ctx: FunctionContext, calls: tuple[Call, ...], path: str, template: str
) -> tuple[tuple[Replacement, ...], list[str]]:
    edits: list[Replacement] = []
    missing: list[str] = []
    for site in ctx.sites(calls):
        info = ctx.call_info(site)
        found = None if info is None else info.arg(path)
        # The zeros are written in the call's file, in its own name for tensorflow; a file with
        # none would call whatever `tf` is there: left to the user.
        alias = None if found is None else ctx.reader.tf_alias(found[2].path)
        if found is None or alias is None:
            missing.append(site)
            continue
        zeros = template.format(tf=alias)
        expr = found[1].strip()
        if expr == "None":
            edits.append(Replacement(found[2], zeros))
            continue
        span = ctx.reader.none_assignment(found[2].path, expr, found[2].line + 1)
        if span is None:
            missing.append(site)
        elif all(e.span != span for e in edits):
            edits.append(Replacement(span, zeros))
    return tuple(edits), missing


def zero_state(anchors: Anchors, edit: Replacement) -> str | None:
    """A ``None`` passed to the function, or assigned before the call, becomes ``tf.zeros(shape, dtype)``."""
    path = edit.span.path
    nones = [a for a in anchors.call_arguments(path) if isinstance(a, ast.Constant) and a.value is None]
    tree = anchors.tree(path)
    if tree is not None:
        nones.extend(
            n.value for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None
        )
    if not any(span_of(n, path) == edit.span for n in nones):
        return "not a None passed to the function or assigned before its call"
    alias = anchors.alias(path)
    new = expression(edit.text)
    if (
        alias is None  # no tensorflow import: `tf` there is the program's own name
        or not isinstance(new, ast.Call)
        or dotted_name(new.func) != [alias, "zeros"]
        or any(k.arg is None for k in new.keywords)
        or not all(is_literal(v, alias) for v in [*new.args, *(k.value for k in new.keywords)])
    ):
        return "the new text is not a zero tensor of a literal shape"
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        _NEVER_SAFE,
        "one structure for every call; safe where TensorFlow ran each recorded trace that got None and the "
        "trace with the zeros on the same inputs, to the same outputs bit for bit",
        probed=True,
    ),
    check=zero_state,
    row=Row(
        "safe when TensorFlow says so",
        "`None` becomes zeros: safe where TensorFlow ran each recorded trace that got `None` beside the trace "
        "with the zeros to the same outputs bit for bit; otherwise unsafe (a `None` branch that starts from "
        "something else changes the results)",
        "`p06_none_branch_ones.py` (item 6)",
    ),
    position=150,
    makers=(Maker(none_to_zeros, 30, call_sites=True),),
)
