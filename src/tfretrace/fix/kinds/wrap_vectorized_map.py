"""Fix kind wrap-vectorized-map: an eager ``tf.vectorized_map(fn, elems)`` wrapped once in a tf.function."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfretrace.fix.core import move_checks
from tfretrace.fix.core.anchor_base import Anchors, span_of
from tfretrace.fix.core.anchor_moves import move, recorded_sites
from tfretrace.fix.core.defs import root_name
from tfretrace.fix.core.kind import Kind, Row
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.scopes import bound_at_module
from tfretrace.fix.core.source import Replacement, SourceReader, Span

NAME = "wrap-vectorized-map"


def vectorized_edits(reader: SourceReader, site: str) -> tuple[str, tuple[Replacement, Replacement]] | None:
    """``tf.vectorized_map(fn, elems)`` called eagerly at ``site`` -> a tf.function made once that calls it.

    The wrapper (``vectorized_<fn>``) is written before the module-level statement holding the
    call; ``fn`` must be a module-level name and the call pass nothing but ``fn`` and ``elems``.
    Returns the wrapper's name and the edits.
    """
    path, _, line_text = site.rpartition(":")
    parsed = reader.module(path)
    alias = reader.tf_alias(path)
    if parsed is None or alias is None or not line_text.isdigit():
        return None
    _text, tree = parsed
    line = int(line_text)
    found = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "vectorized_map"
        and root_name(n.func) == alias and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    if len(found) != 1 or len(found[0].args) != 2 or found[0].keywords:
        return None
    call = found[0]
    fn, elems = call.args
    if not isinstance(fn, ast.Name) or not bound_at_module(tree, fn.id) or isinstance(elems, ast.Starred):
        return None
    name = f"vectorized_{fn.id}"
    top = next((s for s in tree.body if s.lineno <= call.lineno <= (s.end_lineno or s.lineno)), None)
    if top is None or bound_at_module(tree, name):
        return None
    start = min([top.lineno] + [d.lineno for d in getattr(top, "decorator_list", [])])
    wrapper = f"@{alias}.function\ndef {name}(elems):\n    return {alias}.vectorized_map({fn.id}, elems)\n"
    elems_text = reader.text(span_of(elems, path))
    return name, (
        Replacement(Span(path, start, 0, start, 0), wrapper),
        Replacement(span_of(call, path), f"{name}({elems_text})"),
    )


def _vectorized_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    for site in recorded_sites(anchors, edit):
        wrapped = vectorized_edits(anchors.reader, site)
        if wrapped is not None:
            yield wrapped[1]


def conditions(edits: tuple[Replacement, ...], reader: SourceReader) -> str | None:
    wrapper = next((e for e in edits if e.text.startswith("@")), None)
    parsed = reader.module(edits[0].span.path) if edits else None
    if wrapper is None or parsed is None:
        return "tfretrace could not read the wrapper it writes"
    tree = parsed[1]
    call = next((n for n in ast.walk(ast.parse(wrapper.text)) if isinstance(n, ast.Call) and len(n.args) == 2), None)
    fn = call.args[0] if call is not None else None
    if not isinstance(fn, ast.Name):
        return "tfretrace could not read the function the wrapper maps"
    found = move_checks.module_def(tree, fn.id)
    if found is None:
        return (
            f"{fn.id} is not a def bound once at module level (a loop variable, say): the wrapper, traced once, "
            f"would keep the first function {fn.id} named"
        )
    return move_checks.frozen_reads(tree, found)


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the wrapper is traced once per input signature; safe only where fn is a def bound once at module "
        "level (a loop variable would be frozen at its first value) whose reads cannot change between calls",
    ),
    check=move(_vectorized_once, "the vectorized_map wrapper and its call"),
    derive=_vectorized_once,
    row=Row(
        "safe when checked",
        "`fn` is a def bound once at module level (a loop variable would be frozen at its first value) "
        "and its reads cannot change",
        "`p04_vectorized_loop.py` (item 4)",
    ),
    whole_conditions=conditions,
    position=70,
)
