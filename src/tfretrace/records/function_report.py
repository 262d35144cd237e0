"""One function's record: its calls, traces, trace events, XLA compiles and fix plan (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfretrace._util import checked as C
from tfretrace.records import display
from tfretrace.records.events import KerasInfo, TraceEvent
from tfretrace.records.function_key import FunctionKey
from tfretrace.records.xla_events import RECOMPILE, XlaEvent

# The types of a fix plan step's known fields (tfretrace.fix.planning.plan.PlanStep.to_dict); a step may
# lack some (the renderers skip it) or carry fields a newer tfretrace added.
_STEP_FIELDS: dict[str, Any] = {
    "cause": C.text, "kind": C.text, "summary": C.text, "code": C.optional_text,
    "traces_before": C.count, "traces_after": C.count, "seconds_saved": C.seconds,
    "verified": C.optional_count, "final": C.flag, "safety": C.optional_text, "unsafe_reason": C.optional_text,
    "checked": C.optional_text, "checked_inputs": C.optional_count,
}
_EDIT_FIELDS: dict[str, Any] = {
    "path": C.text, "text": C.text, "line": C.count, "col": C.count, "end_line": C.count,
    "end_col": C.count,
}


def _plan_step(value: Any, where: str) -> dict[str, Any]:
    step = _typed(value, where, _STEP_FIELDS)
    if "edits" in step:
        edits = C.items(step["edits"], f"{where}.edits")
        step["edits"] = [_edit(e, f"{where}.edits[{i}]") for i, e in enumerate(edits)]
    return step


def _edit(value: Any, where: str) -> dict[str, Any]:
    # Unlike a step's prose fields, an edit is applied to the user's file: every field is needed
    # (the session schema requires them all), so an incomplete one fails the load.
    edit = _typed(value, where, _EDIT_FIELDS)
    missing = [name for name in _EDIT_FIELDS if name not in edit]
    if missing:
        raise C.FieldError(f"{where} lacks {', '.join(missing)}")
    return edit


def _typed(value: Any, where: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A copy of a JSON object with each known field read by its checked reader."""
    data = dict(C.mapping(value, where))
    for name, read in fields.items():
        if name in data:
            data[name] = read(data[name], f"{where}.{name}")
    return data



@dataclass(frozen=True)
class FunctionReport:
    """Everything recorded for one piece of traced Python code (all its tf.function objects)."""

    name: str
    location: str
    calls: int
    traces: int
    # Own time of the traces (TraceEvent.seconds): nested traces count in their own function only.
    trace_seconds: float
    objects: int
    events: tuple[TraceEvent, ...]
    keras: KerasInfo | None = None
    failed_traces: int = 0
    dropped_events: int = 0
    worker: str | None = None
    # The fix plan in its JSON form (tfretrace.fix.planning.plan.PlanStep.to_dict), ranked by savings.
    plan: tuple[dict[str, Any], ...] = ()
    # The exact number of retraces, recorded live; None (older sessions, hand-built reports)
    # counts the kept events, which miss the ones beyond the bounded history.
    retrace_count: int | None = None
    # XLA compiles (jit_compile): exact totals, and the kept events (bounded like trace events).
    xla_compiles: int = 0
    xla_compile_seconds: float = 0.0
    xla_events: tuple[XlaEvent, ...] = ()
    megamorphic: tuple[str, ...] = ()
    # Traces a budget or strict mode refused: TensorFlow never traced them.
    refused_traces: int = 0
    # Of ``traces``, those TensorFlow made before the monitor met the function (events with
    # ``earlier`` set): counted like the others, as TensorFlow's own tracing count does.
    earlier_traces: int = 0
    # Which function this is across runs (tfretrace.records.function_key); None in older sessions.
    key: FunctionKey | None = None
    # ``get_concrete_function`` call sites of the user's that passed Python values (a number, a
    # bool, a string): cached calls no trace shows, which an edit at the call sites can make trace.
    concrete_python_sites: tuple[str, ...] = ()
    # The plan's predicted traces after `tfretrace fix --apply` and after `--apply --unsafe-fixes`
    # (None: nothing predicted); None for a report planned by no tfretrace that knew safety classes.
    fix_counts: tuple[int | None, int | None] | None = None
    # The first stateful random op its traces drew from, read from each graph as it was made (None: none, or
    # an older session): a fix that removes traces makes it draw other numbers, even where the def is gone.
    draw: str | None = None

    @property
    def retraces(self) -> int:
        """Traces that were not expected (first trace, variable creation, one per replica device)."""
        if self.retrace_count is not None:
            return self.retrace_count
        return sum(1 for e in self.events if e.is_retrace)

    @property
    def main_cause(self) -> str | None:
        """The cause whose fix removes the largest share of traces (the plan's ranking), else the most frequent one.

        The share a step removes (removed / traces before it) does not depend on where the plan puts
        it when causes multiply (5 function objects x 2 shapes: one object removes 4/5 of the traces
        before or after the shapes are fixed), and the plan orders steps by who makes them.
        ``xla-recompile`` when nothing retraced but XLA compiled again; None when neither.
        Only a cause the recorded retraces had is named: a step for a cause that an earlier step
        brings about (a list made a tensor, then its shape opened) ranks nothing here.
        """
        counts: dict[str, int] = {}
        for event in self.events:
            if event.is_retrace:
                counts[event.cause] = counts.get(event.cause, 0) + 1
        best: tuple[float, int, float, str] | None = None
        for step in self.plan:
            try:
                before = int(step["traces_before"])
                removed = before - int(step["traces_after"])
                key = (removed / max(before, 1), removed, float(step.get("seconds_saved", 0)), str(step["cause"]))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # a malformed step (a foreign session) ranks nothing
            if counts and key[3] not in counts:
                continue
            if removed > 0 and (best is None or key[:3] > best[:3]):
                best = key
        if best is not None:
            return best[3]
        if counts:
            return max(counts, key=lambda k: (counts[k], k))
        if self.xla_recompiles:  # never retraced, but XLA compiled a trace again: one answer everywhere

            return RECOMPILE
        return None

    @property
    def xla_recompiles(self) -> int:
        """XLA compiles beyond the first of each trace (the ones to fix)."""
        firsts = {e.trace for e in self.xla_events}
        return max(self.xla_compiles - len(firsts), 0)

    def keras_models(self) -> list[str]:
        """Names of the Keras models whose traces this function holds, in order of appearance."""
        names: list[str] = []
        for event in self.events:
            if event.keras is not None and event.keras.model not in names:
                names.append(event.keras.model)
        return names

    def display_name(self) -> str:
        """The name a user recognises: the Keras model and method when there is one."""
        if self.keras is None:
            return self.name
        models = self.keras_models()
        if len(models) > 1:
            more = ", ..." if len(models) > 3 else ""
            return f"Keras {self.keras.method} ({len(models)} models: {', '.join(models[:3])}{more})"
        return f"{self.keras.model}.{self.keras.method}"

    def _repr_html_(self) -> str | None:
        """Jupyter: this function's part of the HTML report, in a frame, offline."""
        return display.show("function_html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text form: one line, not the dataclass's field dump."""
        printer.text(
            f"<tfretrace.FunctionReport {self.display_name()} ({self.location}): "
            f"{self.calls} calls, {self.traces} traces, {self.retraces} retraces>"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form of one function (schema 1)."""
        return {
            "name": self.name,
            "display_name": self.display_name(),
            "location": self.location,
            "calls": self.calls,
            "traces": self.traces,
            "failed_traces": self.failed_traces,
            "refused_traces": self.refused_traces,
            "earlier_traces": self.earlier_traces,
            "trace_seconds": round(self.trace_seconds, 6),
            "objects": self.objects,
            "keras": None if self.keras is None else self.keras.to_dict(),
            "main_cause": self.main_cause,
            "dropped_events": self.dropped_events,
            "retraces": self.retraces,
            "worker": self.worker,
            "plan": [dict(step) for step in self.plan],
            "events": [e.to_dict() for e in self.events],
            "xla_compiles": self.xla_compiles,
            "xla_compile_seconds": round(self.xla_compile_seconds, 6),
            "xla_events": [e.to_dict() for e in self.xla_events],
            "megamorphic": list(self.megamorphic),
            "key": None if self.key is None else self.key.to_dict(),
            "concrete_python_sites": list(self.concrete_python_sites),
            **({} if self.draw is None else {"draw": self.draw}),
            **({} if self.fix_counts is None else {
                "fix_counts": {"apply": self.fix_counts[0], "unsafe_fixes": self.fix_counts[1]}
            }),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "function") -> FunctionReport:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""

        data = C.mapping(data, where)
        keras = data.get("keras")
        return cls(
            name=C.text(data.get("name"), f"{where}.name"),
            location=C.text(data.get("location"), f"{where}.location"),
            calls=C.count(data.get("calls"), f"{where}.calls"),
            traces=C.count(data.get("traces"), f"{where}.traces"),
            trace_seconds=C.seconds(data.get("trace_seconds"), f"{where}.trace_seconds"),
            objects=C.count(data.get("objects", 1), f"{where}.objects"),
            events=C.each(data.get("events", []), f"{where}.events", TraceEvent.from_dict),
            keras=None if keras is None else KerasInfo.from_dict(keras, f"{where}.keras"),
            failed_traces=C.count(data.get("failed_traces", 0), f"{where}.failed_traces"),
            refused_traces=C.count(data.get("refused_traces", 0), f"{where}.refused_traces"),
            earlier_traces=C.count(data.get("earlier_traces", 0), f"{where}.earlier_traces"),
            dropped_events=C.count(data.get("dropped_events", 0), f"{where}.dropped_events"),
            retrace_count=C.optional_count(data.get("retraces"), f"{where}.retraces"),
            worker=C.optional_text(data.get("worker"), f"{where}.worker"),
            plan=C.each(data.get("plan") or [], f"{where}.plan", _plan_step),
            xla_compiles=C.count(data.get("xla_compiles", 0), f"{where}.xla_compiles"),
            xla_compile_seconds=C.seconds(data.get("xla_compile_seconds", 0.0), f"{where}.xla_compile_seconds"),
            xla_events=C.each(data.get("xla_events", []), f"{where}.xla_events", XlaEvent.from_dict),
            megamorphic=C.texts(data.get("megamorphic", []), f"{where}.megamorphic"),
            key=None if data.get("key") is None else FunctionKey.from_dict(data["key"], f"{where}.key"),
            concrete_python_sites=C.texts(data.get("concrete_python_sites", []), f"{where}.concrete_python_sites"),
            fix_counts=_fix_counts(data.get("fix_counts"), f"{where}.fix_counts"),
            draw=C.optional_text(data.get("draw"), f"{where}.draw"),
        )


def _fix_counts(value: Any, where: str) -> tuple[int | None, int | None] | None:
    if value is None:
        return None
    data = C.mapping(value, where)
    return (C.optional_count(data.get("apply"), f"{where}.apply"),
            C.optional_count(data.get("unsafe_fixes"), f"{where}.unsafe_fixes"))
