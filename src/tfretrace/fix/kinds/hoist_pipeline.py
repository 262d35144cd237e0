"""Fix kind hoist-pipeline: a tf.data pipeline rebuilt on each pass of a loop, built once before it; conditions."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tfretrace.fix.core.anchor_base import Anchors
from tfretrace.fix.core.anchor_moves import move, recorded_sites
from tfretrace.fix.core.hoist import pipeline_edits
from tfretrace.fix.core.kind import Kind, Row
from tfretrace.fix.core.move_checks import frozen_reads, module_bindings, module_def
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement

NAME = "hoist-pipeline"

# tf.data methods that take a function traced once per build of the pipeline.
_TAKES_FUNCTION = frozenset({"map", "filter", "flat_map", "interleave", "reduce", "scan", "apply", "group_by_window"})

# Dataset methods that draw random numbers.
_RANDOM_METHODS = frozenset({"shuffle", "random", "sample_from_datasets", "choose_from_datasets", "rejection_resample"})


def _pipeline_once(anchors: Anchors, edit: Replacement) -> Iterator[tuple[Replacement, ...]]:
    for site in recorded_sites(anchors, edit):
        moved = pipeline_edits(anchors.reader, site)
        if moved is not None:
            yield moved


def pipeline_risk(tree: ast.Module, statement: ast.stmt) -> str | None:
    """Why a pipeline built once computes other results than one built every pass, or None."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _RANDOM_METHODS:
                return (
                    f"the pipeline calls .{node.func.attr}(): built once, it draws a new order (or sample) each "
                    "iteration where each build drew its own (a seeded shuffle repeated its order every epoch)"
                )
            if node.func.attr in _TAKES_FUNCTION:
                for arg in (*node.args, *(k.value for k in node.keywords)):
                    reason = _function_arg_risk(tree, arg)
                    if reason is not None:
                        return f"the function given to .{node.func.attr}() is traced once, not per build: {reason}"
    return None


def _function_arg_risk(tree: ast.Module, arg: ast.expr) -> str | None:
    if isinstance(arg, ast.Lambda):
        return frozen_reads(tree, arg)
    if isinstance(arg, ast.Name):
        found = module_def(tree, arg.id)
        if found is not None:
            return frozen_reads(tree, found)
        if not module_bindings(tree, arg.id):
            return None  # a builtin
        return f"{arg.id} is not a def of this file bound once"
    if isinstance(arg, ast.Constant):
        return None
    return "it is not a plain function of this file"


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "the pipeline reads nothing the loop binds; safe only where it draws no random numbers (shuffle "
        "reshuffles each iteration of one dataset) and its map functions read no state a pass changes",
    ),
    check=move(_pipeline_once, "the pipeline built once before its loop"),
    derive=_pipeline_once,
    row=Row(
        "safe when checked",
        "the pipeline reads nothing the loop binds; it draws no random numbers (a `shuffle` of one "
        "dataset reshuffles each iteration where a seeded shuffle rebuilt each pass repeated its order); "
        "the functions given to `map`/`filter`/... read no state a pass changes",
        "`p07_seeded_shuffle.py` (item 7)",
    ),
    move_conditions=lambda site: pipeline_risk(site.tree, site.moved),
    position=60,
)
