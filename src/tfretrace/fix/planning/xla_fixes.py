"""Fix-plan steps for XLA recompiles: bucket the dimensions that varied, or turn XLA off."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.step import PlanStep
from tfretrace.records.function_report import FunctionReport

# At most this many bucket sizes per dimension: each is one more compile, kept small on purpose.
MAX_BUCKETS = 4


def buckets_for(sizes: Sequence[int]) -> tuple[int, ...]:
    """A few sizes covering every size seen: powers of two at or above each, at most MAX_BUCKETS.

    When powers of two give more than MAX_BUCKETS, the largest sizes are kept and the smaller
    ones padded up to the smallest kept bucket.
    """
    powers = sorted({1 << max(int(s) - 1, 0).bit_length() for s in sizes})
    if len(powers) > MAX_BUCKETS:
        powers = powers[-MAX_BUCKETS:]
    return tuple(powers)


def _bucket(size: int, buckets: Sequence[int]) -> int:
    return next((b for b in buckets if b >= size), size)


def xla_steps(report: FunctionReport, reader: SourceReader | None = None) -> list[PlanStep]:
    """The XLA steps for one function: bucketing per recompiled trace, then jit_compile=False.

    Counts are over the compiles this run recorded; a step is offered only when it removes compiles.
    ``reader``: the function's own decorator is read, so that the advice keeps its other arguments.
    """
    events = list(report.xla_events)
    recompiled = [e for e in events if e.cause == "xla-recompile"]
    if not recompiled:
        return []
    per_compile = sum(e.seconds for e in events) / len(events)
    steps = []
    by_trace: dict[int, list[Any]] = {}
    for event in events:
        by_trace.setdefault(event.trace, []).append(event)
    before = len(events)
    after_all = 0
    varying_text: list[str] = []
    for trace, compiles in sorted(by_trace.items()):
        varying: dict[tuple[str, int], list[int]] = {}
        for event in compiles:
            for leaf in event.signature:
                for dim, size in enumerate(leaf.shape or ()):
                    if size is not None:
                        varying.setdefault((leaf.path, dim), []).append(size)
        varying = {k: v for k, v in varying.items() if len(set(v)) > 1}
        buckets = {k: buckets_for(v) for k, v in varying.items()}
        shapes = set()
        for event in compiles:
            key = []
            for leaf in event.signature:
                dims = tuple(
                    _bucket(s, buckets[(leaf.path, d)]) if (leaf.path, d) in buckets and s is not None else s
                    for d, s in enumerate(leaf.shape or ())
                )
                key.append((leaf.path, leaf.dtype, dims))
            shapes.add(tuple(key))
        after_all += len(shapes)
        for (path, dim), sizes in sorted(varying.items()):
            seen = ", ".join(str(s) for s in sorted(set(sizes)))
            varying_text.append(
                f"{path} dim {dim} (trace #{trace}: seen {seen} -> buckets {', '.join(map(str, buckets[(path, dim)]))})"
            )
    if varying_text and after_all < before:
        code = (
            "def pad_to_bucket(x, axis, buckets):\n"
            "    size = x.shape[axis]\n"
            "    target = next(b for b in buckets if b >= size)\n"
            "    pad = [[0, 0]] * len(x.shape)\n"
            "    pad[axis] = [0, target - size]\n"
            "    return tf.pad(x, pad)   # mask or slice the padding out of the result"
        )
        steps.append(PlanStep(
            cause="xla-recompile",
            kind="xla-bucket",
            summary="pad the dimensions that varied to a few sizes so XLA compiles once per size: "
            + "; ".join(varying_text),
            code=code,
            edits=(),
            traces_before=report.traces,
            traces_after=report.traces,
            seconds_saved=(before - after_all) * per_compile,
            compiles_before=before,
            compiles_after=after_all,
        ))
    # Compiles outnumber the calls that reuse one: XLA costs more than it can give back.
    if 2 * report.xla_compiles > report.calls:
        keras = report.keras is not None
        steps.append(PlanStep(
            cause="xla-recompile",
            kind="xla-off",
            summary=(
                f"{report.xla_compiles} XLA compiles for {report.calls} calls: compiles outnumber the calls "
                "that reuse one; "
                + ("compile the model with jit_compile=False, or feed it fixed shapes"
                   " (drop_remainder=True, padded batches)" if keras else "turn XLA off for this function")
            ),
            code="model.compile(..., jit_compile=False)" if keras else _xla_off(report, reader),
            edits=(),
            traces_before=report.traces,
            traces_after=report.traces,
            seconds_saved=report.xla_compile_seconds,
            compiles_before=report.xla_compiles,
            compiles_after=0,
        ))
    return steps


def _xla_off(report: FunctionReport, reader: SourceReader | None) -> str:
    """The function's own decorator with ``jit_compile=False``, its other arguments kept as written.

    Pasting ``@tf.function(jit_compile=False)`` over ``@tf.function(input_signature=..., jit_compile=True)``
    would drop the signature and turn the XLA compiles into retraces.
    """
    plain = "@tf.function(jit_compile=False)"
    if reader is None:
        return plain
    definition = reader.function_at(report.location, report.name.rsplit(".", 1)[-1])
    if definition is None or definition.decorator_text is None:
        return plain
    text = definition.decorator_text
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return plain
    text = text.strip()
    if not isinstance(node, ast.Call):
        return f"@{text}(jit_compile=False)"
    parts = [ast.get_source_segment(text, a) or "" for a in node.args]
    parts += [
        f"{k.arg}={ast.get_source_segment(text, k.value)}" if k.arg is not None
        else f"**{ast.get_source_segment(text, k.value)}"
        for k in node.keywords if k.arg != "jit_compile"
    ]
    return f"@{ast.get_source_segment(text, node.func)}({', '.join([*parts, 'jit_compile=False'])})"
