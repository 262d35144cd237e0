"""Maker for a new tf.function object per pass or call: hoist-def, hoist-factory-call, hoist-wrap, or advice."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.kind import Maker
from tfretrace.fix.kinds import hoist_def, hoist_factory_call, hoist_wrap
from tfretrace.records.events import TraceEvent


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
            # Also a model used before its only compile() (a tutorial's untrained predict): compile first.
            "keras-recompile": f"compile the model once, before its first {method}: each compile() resets its "
            f"{method} functions (change the learning rate through model.optimizer.learning_rate.assign instead)",
            "keras-load-model": f"load the model once and reuse it: each load_model() makes new {method} functions",
        }.get(cause, f"build the Keras model once and reuse it: each new model makes new {method} functions")
        return Candidate(cause, "advice", summary, None, (), merged)
    hoisted = hoist_def.candidate(ctx, merged)
    if hoisted is not None:
        return hoisted
    if definition is not None and definition.outer_kind == "def":
        called = hoist_factory_call.candidate(ctx, definition, ctx.sites(calls), merged)
        if called is not None:
            return called
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
        wrapped = hoist_wrap.candidate(ctx, site, merged)
        if wrapped is not None:
            return wrapped
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


# This module declares no edit kind of its own (its steps are other kinds' or advice): its maker is listed here.
MAKERS = (Maker(one_object, 90),)
