"""Fixes at the declaration and the data: input_signature, reduce_retracing, drop_remainder, element_spec."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from tfretrace.fix.core.body import reads_static_size
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.files import lines as source_lines
from tfretrace.fix.core.hoist import hoist_edits, wrap_moved
from tfretrace.fix.core.predict import Call, Config
from tfretrace.fix.core.rules import fold_all
from tfretrace.fix.core.safety import TF_CHECKED
from tfretrace.fix.core.source import BatchCall, Replacement, Span
from tfretrace.records.events import SPEC, TENSOR, Leaf


def decorator_edit(
    ctx: FunctionContext, keyword: str, state: State | None = None
) -> tuple[str, tuple[Replacement, ...]]:
    """The tf.function declaration with one more keyword argument: its new text and the edit.

    After a hoist step (``state.moved``) the edits are the hoist's, the moved def carrying the new
    decorator: the step replaces the hoist's edits instead of editing the def it removes.
    """
    definition = ctx.definition
    tf = ctx.tf
    if definition is not None and definition.tf_alias is None and "TensorSpec" in keyword:
        # The def's file has no `import tensorflow as ...`: tf.TensorSpec would not resolve there.
        return f"@{tf}.function({keyword})", ()
    if definition is not None and definition.decorator is not None and definition.decorator_text is not None:
        new = _add_keyword(definition.decorator_text, keyword)
        moved = hoist_edits(definition, ctx.reader, new) if state is not None and state.moved else None
        if moved is not None:
            return "@" + new, moved
        return "@" + new, (Replacement(definition.decorator, _indented(ctx, definition.decorator, new)),)
    if definition is not None and definition.wrap_call is not None and definition.wrap_text is not None:
        new = _add_keyword(definition.wrap_text, keyword)
        if state is not None and state.moved:
            # After hoist-wrap the declaration goes into the moved line; where it cannot be
            # written there, editing the removed line would undo the move: no edit, by hand.
            once = wrap_moved(ctx.reader, definition, new)
            return new, once if once is not None else ()
        return new, (Replacement(definition.wrap_call, _indented(ctx, definition.wrap_call, new)),)
    return f"@{tf}.function({keyword})\ndef {ctx.short}(...):\n    ...", ()


def _indented(ctx: FunctionContext, span: Span, text: str) -> str:
    # Continuation lines of a multi-line replacement follow the indentation of the line they start on.
    parsed = ctx.reader.module(span.path)
    if parsed is None or "\n" not in text:
        return text
    line = source_lines(parsed[0])[span.line - 1].rstrip("\r\n")
    indent = line[: len(line) - len(line.lstrip())]
    return text.replace("\n", "\n" + indent)


def _add_keyword(text: str, keyword: str) -> str:
    name = keyword.split("=", 1)[0]
    stripped = text.rstrip()
    if not stripped.endswith(")"):
        return f"{stripped}({keyword})"
    # Replace the keyword when present (reduce_retracing=False -> True), else add it last.
    pattern = re.compile(rf"\b{re.escape(name)}\s*=\s*(\[[^\]]*\]|[^,)]*)")
    if pattern.search(stripped):
        return pattern.sub(lambda _: keyword, stripped, count=1)
    inner = stripped[stripped.index("(") + 1 : -1].strip()
    if not inner:
        return f"{stripped[:-1]}{keyword})"
    return f"{stripped[:-1].rstrip().rstrip(',')}, {keyword})"


def reduce_retracing(ctx: FunctionContext, state: State) -> Candidate | None:
    """reduce_retracing=True, offered only where TF's generalization removes traces."""
    if state.config.reduce_retracing or ctx.report.keras is not None:
        return None
    node = None if ctx.definition is None else ctx.definition.node
    varied = varying_paths(state.replay.calls, TENSOR)
    if node is not None and any(reads_static_size(node, path) for path in varied):
        # Generalized to a None dimension, x.shape[0] is None and len(x) fails in the new trace.
        return None
    code, edits = decorator_edit(ctx, "reduce_retracing=True", state)
    return Candidate(
        "shape-changed",
        "reduce-retracing",
        "let TensorFlow generalize the shapes that vary (reduce_retracing=True)",
        code,
        edits,
        replace(state, config=replace(state.config, reduce_retracing=True)),
    )


def drop_remainder(ctx: FunctionContext, state: State) -> Candidate | None:
    """drop_remainder=True when the only new shape is a smaller last batch."""
    calls = state.replay.calls
    if len(calls) < 2 or ctx.report.keras is not None:
        return None
    full = calls[0].signature
    if any(leaf.kind == SPEC and "PerReplica" in (leaf.type_name or "") for leaf in full):
        return None  # per-replica batches: the distributed dataset's element_spec keeps every example
    batch = _batch_size(full)
    if batch is None:
        return None
    partial: dict[int, Call | None] = {}
    for call in calls[1:]:
        if _same_but_batch(full, call.signature, batch):
            partial[call.index] = None
        elif tuple(call.signature) != tuple(full) and not _same_but_batch(full, call.signature, None):
            return None
    if not partial:
        return None
    full_sites = {c.site for c in calls if c.index not in partial}
    if any(c.site not in full_sites for c in calls if c.index in partial):
        return None  # a smaller batch from another call site is another pipeline's, not a remainder
    sizes = sorted({_batch_size(c.signature) or 0 for c in calls if c.index in partial})
    if len(sizes) != 1:
        return None  # several smaller sizes are not one dataset's remainder (buckets, other datasets)
    edits: tuple[Replacement, ...] = ()
    where = "the .batch() call"
    batch_calls: list[BatchCall] = []
    for path in {s.rpartition(":")[0] for s in ctx.sites(calls)} | ({ctx.definition.path} if ctx.definition else set()):
        # A batch() call written with another literal size is not the one that made these batches.
        batch_calls.extend(
            b for b in ctx.reader.batch_calls(path) if not b.has_drop_remainder and b.size in (None, batch)
        )
    if len(batch_calls) > 1:
        # Several datasets are batched (training and validation, say): keep the one whose batches
        # the recorded call sites loop over.
        looped = {_loop_dataset(ctx, site) for site in ctx.sites(calls)} - {None}
        batch_calls = [b for b in batch_calls if b.assigned_to is not None and b.assigned_to in looped]
    if len(batch_calls) == 1:
        found = batch_calls[0]
        end = Span(
            found.span.path, found.span.end_line, found.span.end_col - 1, found.span.end_line, found.span.end_col - 1
        )
        edits = (Replacement(end, ", drop_remainder=True"),)
        where = f"{found.span.path}:{found.span.line}"
        code = f"# {where}\n{found.text[:-1]}, drop_remainder=True)"
    else:
        code = f"dataset = dataset.batch({batch}, drop_remainder=True)"
    return Candidate(
        "shape-changed",
        "drop-remainder",
        f"drop the last partial batch ({', '.join(map(str, sizes))} examples, batch size {batch}) at {where}: "
        "every step then has one shape (it skips those examples each epoch)",
        code,
        edits,
        state.map_calls(partial),
    )


def _batch_size(signature: tuple[Leaf, ...]) -> int | None:
    sizes = {leaf.shape[0] for leaf in signature if leaf.kind == TENSOR and leaf.shape}
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    return size if isinstance(size, int) else None


def _same_but_batch(full: tuple[Leaf, ...], other: tuple[Leaf, ...], batch: int | None) -> bool:
    if len(full) != len(other):
        return False
    for a, b in zip(full, other):
        if a.path != b.path or a.kind != b.kind:
            return False
        if a.kind == TENSOR and a.shape and b.shape and len(a.shape) == len(b.shape):
            if a.dtype != b.dtype or a.shape[1:] != b.shape[1:]:
                return False
            if batch is not None and not (isinstance(b.shape[0], int) and b.shape[0] < batch):
                return False
        elif a != b:
            return False
    return True


def element_spec(ctx: FunctionContext, state: State) -> Candidate | None:
    """input_signature=[dist_dataset.element_spec] for per-replica inputs from a distributed dataset."""
    calls = state.replay.calls
    specs = (
        [leaf for leaf in calls[0].signature if leaf.kind == SPEC and "PerReplica" in (leaf.type_name or "")]
        if calls
        else []
    )
    if not specs or ctx.definition is None or ctx.report.keras is not None:
        return None
    general = fold_all([c.signature for c in calls])
    if general is None:
        return None
    config = Config(reduce_retracing=state.config.reduce_retracing, input_signature=general)
    found = _loop_source(ctx, calls[0].site, specs[0].path)
    dataset = found or "dist_dataset"
    code, edits = decorator_edit(ctx, f"input_signature=[{dataset}.element_spec]", state)
    if found is None:
        edits = ()  # the dataset's name is not known where the decorator runs: advice only
    return Candidate(
        "shape-changed",
        "element-spec",
        f"declare the distributed dataset's element_spec as the input_signature ({dataset}.element_spec covers "
        "every per-replica batch, the partial last one included)",
        code,
        edits,
        replace(state, config=config),
        final=True,
        tf_check=_element_spec_check(ctx, dataset) if edits else None,
    )


def _element_spec_check(ctx: FunctionContext, dataset: str) -> str | None:
    """What TensorFlow says of the body traced with ``[dataset.element_spec]`` (TF_CHECKED: as every trace of the run).

    The spec leaves open what the dataset's batches leave open (the batch dimension, for a partial
    last batch): a body reading a static size there may fail or take another branch, which the
    probe (the run's live function traced afresh with that spec) shows. The dataset must be bound
    once at module level: the decorator reads it at def time, the probe once the program has
    ended, and both must see the same dataset. None where no probe runs (not the recorded run).
    """
    if ctx.probe is None or ctx.definition is None:
        return None
    parsed = ctx.reader.module(ctx.definition.path)
    if parsed is None or not _bound_once(parsed[1], dataset):
        return (f"{dataset} is bound more than once in the file (or in a function): the spec the decorator reads "
                "may not be the dataset of the recorded calls")
    said = ctx.probe(f"[{dataset}.element_spec]")
    return TF_CHECKED if said is None else said


def _bound_once(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is assigned exactly once in the file, at module level, and never declared ``global``."""
    stores = [n for n in ast.walk(tree)
              if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))]
    top = [n for n in tree.body if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                                     for t in n.targets)]
    declared = any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(tree))
    return len(stores) == 1 and len(top) == 1 and not declared


def _loop_source(ctx: FunctionContext, site: str | None, param: str) -> str | None:
    info = ctx.call_info(site)
    if info is None or ctx.definition is None:
        return None
    found = info.arg(param)
    expr = None if found is None else found[1]
    parsed = ctx.reader.module(info.path)
    if expr is None or parsed is None:
        return None
    for node in ast.walk(parsed[1]):
        if not _spans(node, info.line):
            continue
        # A for statement, or a comprehension / generator expression, over the dataset at the call.
        loops: list[ast.For | ast.comprehension] = [node] if isinstance(node, ast.For) else []
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = list(node.generators)
        for loop in loops:
            if not (isinstance(loop.target, ast.Name) and loop.target.id == expr):
                continue
            source = loop.iter
            if (
                isinstance(source, ast.Call)
                and isinstance(source.func, ast.Name)
                and source.func.id == "iter"
                and source.args
            ):
                source = source.args[0]
            if isinstance(source, ast.Name) and _assigned_before(parsed[1], source.id, ctx.definition.line):
                return source.id
    return None


def _loop_dataset(ctx: FunctionContext, site: str | None) -> str | None:
    """The name of what the innermost loop binding this call's arguments iterates over.

    ``for step, (x, y) in enumerate(train_dataset): f(x, y)`` gives ``train_dataset``; ``iter()``
    and ``enumerate()`` are looked through, anything else (zip, a method call) gives None.
    """
    info = ctx.call_info(site)
    parsed = ctx.reader.module(info.path) if info is not None else None
    if info is None or parsed is None:
        return None
    passed = {arg[1] for arg in info.args}
    best: tuple[int, str] | None = None
    for node in ast.walk(parsed[1]):
        if not (isinstance(node, ast.For) and _spans(node, info.line)):
            continue
        if not passed & {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}:
            continue
        source = node.iter
        while (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Name)
            and source.func.id in ("iter", "enumerate")
            and source.args
        ):
            source = source.args[0]
        if isinstance(source, ast.Name) and (best is None or node.lineno > best[0]):
            best = (node.lineno, source.id)  # the innermost such loop starts last
    return best[1] if best is not None else None


def _spans(node: ast.AST, line: int) -> bool:
    """Whether a statement or expression node covers a source line."""
    first = getattr(node, "lineno", None)
    return first is not None and first <= line <= (getattr(node, "end_lineno", None) or first)


def _assigned_before(tree: ast.Module, name: str, line: int) -> bool:
    # The decorator runs at def time: the dataset must exist by then, at module level.
    return any(
        isinstance(node, ast.Assign)
        and node.lineno < line
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in tree.body
    )
