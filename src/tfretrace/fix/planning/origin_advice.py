"""Steps for traces of TensorFlow's own code made for a user's call: advice, or an edit of the code around it."""

from __future__ import annotations

from tfretrace.fix.core.hoist import pipeline_edits
from tfretrace.fix.core.rules import fold_all
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.core.specs import spec_text
from tfretrace.fix.kinds.wrap_vectorized_map import vectorized_edits
from tfretrace.fix.planning.safety_plan import classify
from tfretrace.fix.planning.step import OPEN_FRAMEWORK_CODE, PlanStep
from tfretrace.records.events import TENSOR, TraceEvent
from tfretrace.records.function_report import FunctionReport

# The causes whose traced code is TensorFlow's (pfor's loop, restored_function_body, tf.data's
# wrapper): no replay models their caches and no edit reaches their code, so the plan gives
# advice at the user's call, labelled as such, and predicts nothing.
ORIGIN_CAUSES = frozenset({"pfor-per-call", "restored-new-signature", "restored-reloaded", "data-pipeline-rebuilt"})

_LABEL = "advice, by hand (the traced code is TensorFlow's: tfretrace cannot check a fix for it)"


def origin_steps(report: FunctionReport, reader: SourceReader) -> list[PlanStep] | None:
    """One step per framework cause that retraced, or None when the row has none.

    Advice (a statement: nothing predicted, nothing edited, ``open`` framework-code), except where
    the user's own code around TensorFlow's can be edited: a pipeline rebuilt in a loop built once
    before it, an eager vectorized_map wrapped in a tf.function made once.
    """
    retraces = [e for e in report.events if e.is_retrace]
    causes = list(dict.fromkeys(e.cause for e in retraces))
    if not causes or not set(causes) & ORIGIN_CAUSES:
        return None
    steps: list[PlanStep] = []
    for cause in causes:
        if cause not in ORIGIN_CAUSES:
            continue
        events = [e for e in retraces if e.cause == cause]
        summary, code = _ADVICE[cause](report, events)
        steps.append(_origin_step(cause, f"{_LABEL}: {summary}", code, report, reader))
    return steps


def _sites(events: list[TraceEvent]) -> str:
    return ", ".join(dict.fromkeys(e.call_site or "?" for e in events))


def _pfor(report: FunctionReport, events: list[TraceEvent]) -> tuple[str, str]:
    call = report.name
    summary = (
        f"{call} called eagerly made a new tf.function on each call ({len(events) + 1} traces at "
        f"{_sites(events)}); call it from inside one tf.function created once"
    )
    code = (
        f"# {_sites(events)}: {call} called eagerly traces a new function on every call\n"
        "@tf.function  # created once, outside the loop: pfor is traced into its graph\n"
        "def vectorized(elems):\n"
        f"    return {call}(fn, elems)\n\n"
        f"y = vectorized(elems)  # instead of y = {call}(fn, elems)"
    )
    return summary, code


def _pipeline(report: FunctionReport, events: list[TraceEvent]) -> tuple[str, str]:
    summary = (
        f"the pipeline built at {report.location} was built {len(events) + 1} times, tracing "
        f"{report.name} each time; build it once, outside the loop, and iterate over it again"
    )
    code = (
        f"# {report.location}: build the dataset once, before the loop\n"
        f"ds = make_dataset()  # the pipeline built at {report.location}, with its {report.name}\n"
        "for epoch in range(epochs):\n"
        "    for batch in ds:  # a tf.data.Dataset can be iterated again every epoch\n"
        "        ..."
    )
    return summary, code


def _restored(report: FunctionReport, events: list[TraceEvent]) -> tuple[str, str]:
    name = report.name.split(" ", 1)[0]
    shapes = [e.signature for e in report.events if e.cause != "restored-reloaded"]
    general = fold_all(shapes)
    summary = (
        f"{name} was called with {len(shapes)} input signatures at {_sites(events)}; call it with "
        "the shapes it was saved for (pad to one shape), or save it with an input_signature "
        "open where the calls varied"
    )
    specs = [spec_text(leaf) for leaf in general or () if leaf.kind == TENSOR]
    if specs:
        code = (
            "# where the function is saved: one signature for every call seen\n"
            f"@tf.function(input_signature=[{', '.join(specs)}])\n"
            f"def {name}(...): ..."
        )
    else:
        code = f"# {_sites(events)}: pass {name} the same shapes and dtypes on every call"
    return summary, code


def _reloaded(report: FunctionReport, events: list[TraceEvent]) -> tuple[str, str]:
    name = report.name.split(" ", 1)[0]
    summary = (
        f"the SavedModel was loaded again and {name} traced again ({len(events)} times, at "
        f"{_sites(events)}); load it once at start-up and keep the object"
    )
    code = (
        "loaded = tf.saved_model.load(path)  # once, at start-up\n"
        "def handle(x):\n"
        f"    return loaded.{name}(x)"
    )
    return summary, code


_ADVICE = {
    "pfor-per-call": _pfor,
    "data-pipeline-rebuilt": _pipeline,
    "restored-new-signature": _restored,
    "restored-reloaded": _reloaded,
}


def _origin_step(cause: str, summary: str, code: str, report: FunctionReport, reader: SourceReader) -> PlanStep:
    # Advice for TensorFlow's own code traced for the user's call: a statement, nothing predicted;
    # except a pipeline rebuilt in a loop that can be built once before it: tf.data traces its
    # map function once per build, so one build is one trace.
    traces = report.traces
    sites = {e.call_site for e in report.events}
    if cause == "data-pipeline-rebuilt" and len(sites) == 1 and None not in sites:
        site = str(next(iter(sites)))
        moved = pipeline_edits(reader, site)
        if moved is not None:
            rebuilt = sum(1 for e in report.events if e.cause == "data-pipeline-rebuilt")
            safety, reason = classify("hoist-pipeline", moved, reader)
            return PlanStep(
                cause="data-pipeline-rebuilt",
                kind="hoist-pipeline",
                summary=f"build the pipeline at {site} once, before the loop that rebuilt it "
                f"({rebuilt + 1} builds, each tracing {report.name}); the loop iterates the same dataset again",
                code=f"# {site}: before the loop\n{moved[1].text.rstrip()}",
                edits=moved,
                traces_before=traces,
                traces_after=traces - rebuilt,
                seconds_saved=rebuilt * (report.trace_seconds / max(traces, 1)),
                safety=safety,
                unsafe_reason=reason,
            )
    if cause == "pfor-per-call" and len(sites) == 1 and None not in sites:
        site = str(next(iter(sites)))
        wrapped = vectorized_edits(reader, site)
        if wrapped is not None:
            name, edits = wrapped
            shapes = len({e.signature for e in report.events})
            safety, reason = classify("wrap-vectorized-map", edits, reader)
            return PlanStep(
                cause="pfor-per-call",
                kind="wrap-vectorized-map",
                summary=f"call {report.name} through {name}, a tf.function made once: pfor is traced into its "
                f"graph instead of a new function per eager call ({name} traces once per input signature: "
                f"{shapes} here)",
                code=f"# {site}\n{edits[0].text.rstrip()}\n\n{edits[1].text}",
                edits=edits,
                traces_before=traces,
                traces_after=0,
                seconds_saved=report.trace_seconds * (1 - shapes / max(traces, 1)),
                safety=safety,
                unsafe_reason=reason,
            )
    return PlanStep(
        cause=cause,
        kind="statement",
        summary=summary,
        code=code,
        edits=(),
        traces_before=traces,
        traces_after=traces,
        seconds_saved=0.0,
        open=OPEN_FRAMEWORK_CODE,
    )
