"""Fix kind element-spec: ``input_signature=[dataset.element_spec]`` of a distributed dataset; maker, anchors, class."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.declaration import declaration, decorator_edit
from tfretrace.fix.core.defs import spans_line
from tfretrace.fix.core.kind import PHASE_FINAL, Kind, Maker, Row
from tfretrace.fix.core.predict import Config
from tfretrace.fix.core.rules import fold_all
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.records.events import SPEC

NAME = "element-spec"


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
    # The parameter the per-replica value sits in: `pairs` for `pairs[0]`, a (features, labels) element.
    roots = {_root(leaf.path) for leaf in specs}
    found = _loop_source(ctx, calls[0].site, roots.pop()) if len(roots) == 1 else None
    dataset = found or "dist_dataset"
    code, edits = decorator_edit(ctx, f"input_signature=[{dataset}.element_spec]", state)
    if found is None:
        edits = ()  # the dataset's name is not known where the decorator runs: advice only
    return Candidate(
        "shape-changed",
        NAME,
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


def _root(path: str) -> str:
    """The parameter a recorded leaf path starts from: ``pairs`` for ``pairs[0].replica[1]``."""
    return re.split(r"[\[.]", path, maxsplit=1)[0]


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
        if not spans_line(node, info.line):
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


def _assigned_before(tree: ast.Module, name: str, line: int) -> bool:
    # The decorator runs at def time: the dataset must exist by then, at module level.
    return any(
        isinstance(node, ast.Assign)
        and node.lineno < line
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in tree.body
    )


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        "the body sees the distributed dataset's spec, open where its batches vary (the batch dimension): code "
        "reading a static size there may fail or take another branch; TensorFlow did not trace the function with "
        "it (no live function to probe)",
        "the distributed dataset's own spec, bound once at module level, and TensorFlow traced the body with it "
        "(a fresh tf.function of the same Python function, in the recorded run) to outputs of the structure, "
        "dtypes and ranks of every trace of the run: every batch the dataset yields is accepted",
        probed=True,
    ),
    check=declaration("input_signature"),
    generalizes=True,
    row=Row(
        "safe when TensorFlow says so",
        "the dataset is a module-level name bound once (the decorator reads it at def time, the probe "
        "once the program has ended: both see one dataset); once the recorded program has finished, "
        "TensorFlow traces the run's module-level tf.function afresh with "
        "`input_signature=[dataset.element_spec]` (the spec open where the dataset's batches vary: the "
        "partial last batch); safe (`\"checked\": \"tensorflow\"`) only where that trace succeeds with the "
        "outputs of every trace of the run, as for `input-signature`. Otherwise unsafe, with what "
        "TensorFlow said (a replica function reading `x.shape[0]` fails there)",
        "the `d_static` program of `tests/test_fix_partial_batches_real.py`",
    ),
    declares_signature=True,
    position=100,
    makers=(Maker(element_spec, 10, PHASE_FINAL),),
)
