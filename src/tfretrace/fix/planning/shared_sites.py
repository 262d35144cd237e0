"""A call-site edit at a call the run also saw reach another recorded function: that function's calls change too.

``for model in (a, b): model.train_step([x, y])`` is one call expression that reaches ``A.train_step`` and
``B.train_step``. A step of A's plan that rewrites an argument there (a tuple for the list, a tensor for
a number) is checked against A's traces only; B gets the edited argument as well, and nothing asked
TensorFlow about B. Such a step is unsafe, and so is every step after it (their counts assume it).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.safety import SAFE, UNSAFE
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.safety_plan import after_unsafe
from tfretrace.fix.planning.step import PlanStep, fix_counts
from tfretrace.records.function_report import FunctionReport


def shared_call_sites(functions: tuple[FunctionReport, ...], reader: SourceReader) -> tuple[FunctionReport, ...]:
    """The reports, a safe call-site step made unsafe where its edited call also reached another function."""
    sites: dict[tuple[str, int], set[int]] = {}
    for number, report in enumerate(functions):
        if report.keras is not None:
            continue  # Keras' predict rows: keras-pad-rows checks every model predicting at its lines itself
        for event in report.events:
            site = event.call_site
            if site and site.rpartition(":")[2].isdigit():
                path, _, line = site.rpartition(":")
                sites.setdefault((path, int(line)), set()).add(number)
    out = list(functions)
    for number, report in enumerate(functions):
        if report.keras is not None or not report.plan:
            continue
        steps = [PlanStep.from_dict(dict(s)) for s in report.plan]
        changed = False
        for i, step in enumerate(steps):
            if step.safety != SAFE or not step.edits:
                continue
            other = _other_function(step, number, functions, sites, reader)
            if other is not None:
                reason = (f"the edited call also reaches {other} (one call expression, several functions): its "
                          "calls change too, and TensorFlow was not asked about them")
                steps[i] = replace(step, safety=UNSAFE, unsafe_reason=reason)
                changed = True
        if changed:
            plan = tuple(s.to_dict() for s in after_unsafe(steps))
            out[number] = replace(report, plan=plan, fix_counts=fix_counts(plan))
    return tuple(out)


def _other_function(
    step: PlanStep, number: int, functions: tuple[FunctionReport, ...], sites: dict[tuple[str, int], set[int]],
    reader: SourceReader,
) -> str | None:
    """The name of another recorded function called, at a line of the edited call, by that call's own name."""
    for edit in step.edits:
        found = _enclosing_call(reader, edit.span.path, edit.span.line, edit.span.col)
        if found is None:
            continue
        call, callee = found
        for line in range(call.lineno, (call.end_lineno or call.lineno) + 1):
            for other in sites.get((edit.span.path, line), set()) - {number}:
                name = functions[other].name
                if name.rpartition(".")[2] == callee:
                    return name
    return None


def _enclosing_call(reader: SourceReader, path: str, line: int, col: int) -> tuple[ast.Call, str] | None:
    """The innermost call whose argument holds the position, and the last name of what it calls."""
    parsed = reader.module(path)
    if parsed is None:
        return None
    best: tuple[ast.Call, str] | None = None
    for node in ast.walk(parsed[1]):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if callee is None:
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            start, end = (arg.lineno, arg.col_offset), (arg.end_lineno or arg.lineno, arg.end_col_offset or 0)
            inner = best is None or (node.lineno, node.col_offset) >= (best[0].lineno, best[0].col_offset)
            if start <= (line, col) < end and inner:
                best = (node, callee)
    return best
