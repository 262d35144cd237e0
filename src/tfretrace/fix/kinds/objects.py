"""One object where a loop, a factory or a new instance made one per call: a tf.function, a Keras model, an argument."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.factory import factory_edits
from tfretrace.fix.core.hoist import hoist_edits, hoist_summary, object_once, pipeline_edits
from tfretrace.records.events import OBJECT, TraceEvent


def one_object(ctx: FunctionContext, state: State) -> Candidate | None:
    """One tf.function object instead of one per loop iteration, call of the outer def, or instance."""
    calls = state.replay.calls
    if len({c.obj for c in calls}) < 2:
        return None
    # Objects whose first trace is their own (a trained model, a target network, a library's
    # per-object function: expected, deliberately distinct) stay apart; only the objects made
    # again are merged. None made again: nothing the user could create once.
    rebuilt = _rebuilt_objects(ctx)
    if not rebuilt:
        return None
    first = min(c.obj for c in calls)
    merged = state.map_calls({c.index: replace(c, obj=first) for c in calls if c.obj in rebuilt})
    definition = ctx.definition
    if ctx.report.keras is not None:
        cause = _object_cause(ctx)
        method = ctx.report.keras.method
        summary = {
            "keras-recompile": f"compile the model once: each compile() resets its {method} functions "
            "(change the learning rate through model.optimizer.learning_rate.assign instead)",
            "keras-load-model": f"load the model once and reuse it: each load_model() makes new {method} functions",
        }.get(cause, f"build the Keras model once and reuse it: each new model makes new {method} functions")
        return Candidate(cause, "advice", summary, None, (), merged)
    moved = hoist_edits(ctx.definition, ctx.reader)
    if definition is not None and moved is not None:
        code = f"# {definition.path}:{moved[1].span.line}, at module level\n{moved[1].text.rstrip()}"
        return Candidate(
            "new-function-object", "hoist-def", hoist_summary(definition), code, moved, replace(merged, moved=True)
        )
    if definition is not None and definition.outer_kind == "def":
        sites = ctx.sites(calls)
        made = factory_edits(ctx.reader, definition, sites[0]) if len(sites) == 1 else None
        if made is not None:
            name, edits = made
            return Candidate(
                "new-function-object",
                "hoist-factory-call",
                f"call {definition.outer}() once, before the loop that called it again for {name} at "
                f"{sites[0]}: it only makes the tf.function {definition.name}, and every pass passed it the same "
                "arguments",
                f"# {edits[1].span.path}:{edits[1].span.line}: before the loop\n{edits[1].text.rstrip()}",
                edits,
                merged,
            )
        closes = ", ".join(definition.closes_over)
        summary = (
            f"define {definition.name} once, outside {definition.outer}() (module level or __init__), "
            f"and call that one object: each call of {definition.outer}() makes a new tf.function "
            f"at {definition.path}:{definition.line}"
        )
        if closes:
            summary += f"; it closes over {closes}: pass those as arguments or keep them where the new def can see them"
        return Candidate("new-function-object", "advice", summary, None, (), merged)
    if definition is not None and definition.is_method:
        summary = (
            f"each {definition.outer} instance has its own tf.function for {definition.name} "
            f"({definition.path}:{definition.line}): create the instance once and reuse it"
        )
        return Candidate("new-function-object", "advice", summary, None, (), merged)
    where = ""
    if definition is not None and definition.wrap_call is not None:
        site = f"{definition.path}:{definition.wrap_call.line}"
        once = pipeline_edits(ctx.reader, site)
        if once is not None:
            # `loss_fn = tf.function(compute_loss)` inside a loop: the same object made before it.
            return Candidate(
                "new-function-object",
                "hoist-wrap",
                f"make the tf.function for {ctx.short} once, before the loop that re-created it at {site}",
                f"# {site}: before the loop\n{once[1].text.rstrip()}",
                once,
                replace(merged, moved=True),  # a later declaration edits the moved line
            )
        where = f" (the tf.function(...) call at {site})"
    return Candidate(
        "new-function-object",
        "advice",
        f"create the tf.function for {ctx.short} once{where}, outside the loop or function that re-creates it, "
        "and reuse it",
        None,
        (),
        merged,
    )


def _rebuilt_objects(ctx: FunctionContext) -> set[int]:
    """Objects (tf.functions, Keras models) whose first trace was a retrace (made, loaded or compiled again)."""
    firsts: dict[int, TraceEvent] = {}
    for event in ctx.report.events:
        firsts.setdefault(event.object_index, event)
    if ctx.report.keras is None:
        # Any retrace as an object's first trace: its cache started empty when another had it.
        return {obj for obj, event in firsts.items() if event.is_retrace}
    return {obj for obj, event in firsts.items() if event.cause in _OBJECT_CAUSES and not event.expected}


_OBJECT_CAUSES = ("new-function-object", "keras-new-model", "keras-recompile", "keras-load-model")


def _object_cause(ctx: FunctionContext) -> str:
    counts: dict[str, int] = {}
    for event in ctx.report.events:
        if event.cause in _OBJECT_CAUSES:
            counts[event.cause] = counts.get(event.cause, 0) + 1
    return max(counts, key=lambda c: (counts[c], c)) if counts else "new-function-object"


def same_object(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A new object per call keyed by identity: create it once and pass the same one."""
    out = []
    calls = state.replay.calls
    paths = []
    for call in calls:
        for leaf in call.signature:
            if leaf.kind == OBJECT and leaf.path not in paths:
                paths.append(leaf.path)
    for path in paths:
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path and leaf.kind == OBJECT]
        if len({leaf.ident for leaf in leaves}) < 2:
            continue
        first = leaves[0]
        module = dict(first.extra).get("module", "")
        new = {
            c.index: replace(
                c,
                signature=tuple(
                    replace(leaf, ident=first.ident, alive=True) if leaf.path == path and leaf.kind == OBJECT else leaf
                    for leaf in c.signature
                ),
            )
            for c in calls
        }
        if module.split(".")[0] in ("keras", "tensorflow", "tf_keras"):
            summary = (
                f"{path} is a new {first.type_name} per call, keyed by identity: build it once and pass "
                "the same object (or capture it instead of passing it)"
            )
        else:
            summary = (
                f"{path} is a new {first.type_name} object per call, keyed by identity: create it once "
                "and pass the same object, or make it a NamedTuple (compared by value)"
            )
        moved = object_once(ctx, calls, path)
        if moved is not None:
            # A config object of a plain class made in the loop around the call: made once before it.
            out.append(Candidate(
                "object-identity", "hoist-object",
                f"{path} is a new {first.type_name} per call, keyed by identity: make it once, before the loop",
                f"# {moved[1].span.path}:{moved[1].span.line}: before the loop\n{moved[1].text.rstrip()}",
                moved, state.map_calls(dict(new)),
            ))
            continue
        out.append(Candidate("object-identity", "advice", summary, None, (), state.map_calls(dict(new))))
    return out
