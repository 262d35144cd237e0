"""Plain records of what was traced: argument leaves, changes and trace events (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tfretrace._util import checked as C
from tfretrace.records.function_key import FunctionKey

if TYPE_CHECKING:
    from tfretrace.records.xla_events import XlaEvent

# Leaf kinds. Containers are leaves too, so that a diff can say "list of len 2 -> len 3".
TENSOR = "tensor"
VARIABLE = "variable"
PYTHON = "python"
OBJECT = "object"
SPEC = "spec"
CONTAINERS = frozenset({"list", "tuple", "dict", "namedtuple", "attrs"})
# A Python leaf whose extra holds (LITERAL_RULE, BY_TYPE) was recorded by a TensorFlow whose
# Literal matches only values of the same type and sign (TF 2.23 on), not equal values.
LITERAL_RULE = "literal"
BY_TYPE = "by-type"

# Causes that are part of normal operation, never a retrace to fix (a SavedModel's serialization
# traces come with every save).
EXPECTED_CAUSES = frozenset({"first-trace", "variable-creation", "saved-model-export"})


@dataclass(frozen=True)
class Leaf:
    """One node of an input signature, addressed by its path (``batch['image']``, ``args[1][0]``).

    ``shape`` is None for a tensor of unknown rank; a dimension is None where it is unknown.
    ``value`` holds a Python literal's repr, an object's class and address, or a container's
    length/keys. ``ident`` is the id() of an object keyed by identity (for "same class, new
    object"), ``alive`` whether that object still existed when the trace was recorded.
    """

    path: str
    kind: str
    dtype: str | None = None
    shape: tuple[int | None, ...] | None = None
    value: str | None = None
    type_name: str | None = None
    ident: int | None = None
    alive: bool | None = None
    extra: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """A short human form such as ``Tensor float32(10, None)`` or ``Python int 3``."""
        if self.kind in (TENSOR, VARIABLE):
            word = "Tensor" if self.kind == TENSOR else "Variable"
            return f"{word} {self.dtype}{format_shape(self.shape)}"
        if self.kind == PYTHON:
            return f"Python {self.type_name} {self.value}"
        if self.kind == OBJECT:
            return f"object of class {self.type_name}"
        if self.kind in CONTAINERS:
            return f"{self.type_name or self.kind} {self.value}"
        return f"{self.type_name or self.kind} {self.value or ''}".strip()

    def to_dict(self) -> dict[str, Any]:
        """JSON form; empty fields are left out."""
        out: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.dtype is not None:
            out["dtype"] = self.dtype
        if self.kind in (TENSOR, VARIABLE):
            out["shape"] = None if self.shape is None else list(self.shape)
        for name in ("value", "type_name", "ident", "alive"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.extra:
            out["extra"] = dict(self.extra)
        out["text"] = self.describe()
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "leaf") -> Leaf:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        shape = data.get("shape")
        alive = data.get("alive")
        return cls(
            path=C.text(data.get("path"), f"{where}.path"),
            kind=C.text(data.get("kind"), f"{where}.kind"),
            dtype=C.optional_text(data.get("dtype"), f"{where}.dtype"),
            shape=None if shape is None else tuple(
                C.optional_count(d, f"{where}.shape[{i}]") for i, d in enumerate(C.items(shape, f"{where}.shape"))
            ),
            value=C.optional_text(data.get("value"), f"{where}.value"),
            type_name=C.optional_text(data.get("type_name"), f"{where}.type_name"),
            ident=C.optional_count(data.get("ident"), f"{where}.ident"),
            alive=None if alive is None else C.flag(alive, f"{where}.alive"),
            extra=C.text_map(data.get("extra"), f"{where}.extra"),
        )


# The types of a fix plan step's known fields (tfretrace.fix.plan.PlanStep.to_dict); a step may
# lack some (the renderers skip it) or carry fields a newer tfretrace added.
_STEP_FIELDS: dict[str, Any] = {
    "cause": C.text, "kind": C.text, "summary": C.text, "code": C.optional_text,
    "traces_before": C.count, "traces_after": C.count, "seconds_saved": C.seconds,
    "verified": C.optional_count, "final": C.flag,
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


def _leaves(value: Any, where: str) -> tuple[Leaf, ...]:
    return tuple(Leaf.from_dict(d, f"{where}[{i}]") for i, d in enumerate(C.items(value, where)))


def format_shape(shape: tuple[int | None, ...] | None) -> str:
    """``(10, None)``; ``(<unknown rank>)`` for None; ``(3,)`` for rank 1."""
    if shape is None:
        return "(<unknown rank>)"
    inner = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


@dataclass(frozen=True)
class Change:
    """One differing leaf between a trace and the closest earlier one.

    ``kind`` is the change kind: shape, rank, dtype, python-value, python-type, identity,
    structure, leaf-kind, variable, added, removed or context.
    """

    path: str
    kind: str
    before: str
    after: str
    detail: str = ""

    def line(self) -> str:
        """The one-line form, e.g. ``x: shape (10, 20) -> (10, 21), dim 1``."""
        if self.kind == "identity":
            return f"{self.path}: new object of class {self.after} ({self.detail})"
        tail = f", {self.detail}" if self.detail else ""
        return f"{self.path}: {self.kind_word()} {self.before} -> {self.after}{tail}"

    def kind_word(self) -> str:
        """The noun used in the one-line form."""
        return {
            "python-value": "Python",
            "python-type": "Python type",
            "identity": "new object of class",
            "leaf-kind": "kind",
            "added": "added",
            "removed": "removed",
        }.get(self.kind, self.kind)

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with the rendered line under ``text``."""
        return {
            "path": self.path,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "detail": self.detail,
            "text": self.line(),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "change") -> Change:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        return cls(
            C.text(data.get("path"), f"{where}.path"),
            C.text(data.get("kind"), f"{where}.kind"),
            C.text(data.get("before"), f"{where}.before"),
            C.text(data.get("after"), f"{where}.after"),
            C.text(data.get("detail", ""), f"{where}.detail"),
        )


@dataclass(frozen=True)
class TraceEvent:
    """One trace of one tf.function: why it happened, what it cost, and how to avoid it.

    ``seconds`` is the trace's own time: the traces nested in it (a tf.function called by the
    traced one, Keras' step function inside its loop function) are left out, so sums count each
    second once. ``inclusive_seconds`` is the whole time, nested traces included (None: the same).
    """

    index: int
    cause: str
    seconds: float
    time: float
    call_site: str | None
    signature: tuple[Leaf, ...]
    changes: tuple[Change, ...] = ()
    fix: str | None = None
    calls_since_previous: int | None = None
    calls_total: int | None = None
    object_index: int = 1
    closest: tuple[int, ...] = ()
    traced_as: tuple[Leaf, ...] | None = None
    context: tuple[tuple[str, str], ...] = ()
    thread: str | None = None
    raw_key: str | None = None
    note: str | None = None
    nested: bool = False
    keras: KerasInfo | None = None
    # True for traces that are part of normal operation: a function's first trace, the extra
    # variable-creation trace, and one trace per replica device under a distribution strategy.
    expected: bool = False
    inclusive_seconds: float | None = None
    # Traced before the monitor met the tf.function: read from TensorFlow's cache, so no call
    # site, cost, calls or thread are known (time 0: at or before the session's start).
    earlier: bool = False

    @property
    def total_seconds(self) -> float:
        """The whole time of the trace, nested traces included."""
        return self.seconds if self.inclusive_seconds is None else max(self.inclusive_seconds, self.seconds)

    @property
    def is_retrace(self) -> bool:
        """A trace to fix: not a first trace, a variable-creation trace or a per-replica trace."""
        return not (self.expected or self.cause in EXPECTED_CAUSES)

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the event (schema 1)."""
        return {
            "index": self.index,
            "cause": self.cause,
            "seconds": round(self.seconds, 6),
            "inclusive_seconds": round(self.total_seconds, 6),
            "time": round(self.time, 6),
            "call_site": self.call_site,
            "signature": [leaf.to_dict() for leaf in self.signature],
            "changes": [c.to_dict() for c in self.changes],
            "fix": self.fix,
            "calls_since_previous": self.calls_since_previous,
            "calls_total": self.calls_total,
            "object": self.object_index,
            "closest": list(self.closest),
            "traced_as": None
            if self.traced_as is None
            else [leaf.to_dict() for leaf in self.traced_as],
            "context": dict(self.context),
            "thread": self.thread,
            "raw_key": self.raw_key,
            "note": self.note,
            "nested": self.nested,
            "keras": None if self.keras is None else self.keras.to_dict(),
            "expected": self.expected,
            "earlier": self.earlier,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "event") -> TraceEvent:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        traced = data.get("traced_as")
        cause = C.text(data.get("cause"), f"{where}.cause")
        return cls(
            index=C.count(data.get("index"), f"{where}.index", low=1),
            cause=cause,
            seconds=C.seconds(data.get("seconds"), f"{where}.seconds"),
            time=C.seconds(data.get("time", 0.0), f"{where}.time", low=-C.MAX_SECONDS),
            call_site=C.optional_text(data.get("call_site"), f"{where}.call_site"),
            signature=_leaves(data.get("signature", []), f"{where}.signature"),
            changes=tuple(
                Change.from_dict(d, f"{where}.changes[{i}]")
                for i, d in enumerate(C.items(data.get("changes", []), f"{where}.changes"))
            ),
            fix=C.optional_text(data.get("fix"), f"{where}.fix"),
            calls_since_previous=C.optional_count(data.get("calls_since_previous"), f"{where}.calls_since_previous"),
            calls_total=C.optional_count(data.get("calls_total"), f"{where}.calls_total"),
            object_index=C.count(data.get("object", 1), f"{where}.object", low=1),
            closest=tuple(
                C.count(n, f"{where}.closest[{i}]", low=1)
                for i, n in enumerate(C.items(data.get("closest", []), f"{where}.closest"))
            ),
            traced_as=None if traced is None else _leaves(traced, f"{where}.traced_as"),
            context=C.text_map(data.get("context"), f"{where}.context"),
            thread=C.optional_text(data.get("thread"), f"{where}.thread"),
            raw_key=C.optional_text(data.get("raw_key"), f"{where}.raw_key"),
            note=C.optional_text(data.get("note"), f"{where}.note"),
            nested=C.flag(data.get("nested", False), f"{where}.nested"),
            keras=None if data.get("keras") is None else KerasInfo.from_dict(data["keras"], f"{where}.keras"),
            expected=C.flag(data.get("expected", cause in EXPECTED_CAUSES), f"{where}.expected"),
            inclusive_seconds=None if data.get("inclusive_seconds") is None
            else C.seconds(data.get("inclusive_seconds"), f"{where}.inclusive_seconds"),
            earlier=C.flag(data.get("earlier", False), f"{where}.earlier"),
        )


@dataclass(frozen=True)
class KerasInfo:
    """Which Keras model and user-level method a Keras-created tf.function belongs to."""

    model: str
    model_class: str
    method: str
    built_at: str | None = None
    epoch: int | None = None
    step: int | None = None

    def describe(self) -> str:
        """``model 'encoder' (Functional, built at app.py:40) predict``."""
        where = f", built at {self.built_at}" if self.built_at else ""
        when = ""
        if self.epoch is not None:
            when = f" (epoch {self.epoch}" + (f", step {self.step})" if self.step is not None else ")")
        return f"model '{self.model}' ({self.model_class}{where}) {self.method}{when}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "model": self.model,
            "model_class": self.model_class,
            "method": self.method,
            "built_at": self.built_at,
            "epoch": self.epoch,
            "step": self.step,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "keras") -> KerasInfo:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        return cls(
            C.text(data.get("model"), f"{where}.model"),
            C.text(data.get("model_class"), f"{where}.model_class"),
            C.text(data.get("method"), f"{where}.method"),
            C.optional_text(data.get("built_at"), f"{where}.built_at"),
            C.optional_count(data.get("epoch"), f"{where}.epoch"),
            C.optional_count(data.get("step"), f"{where}.step"),
        )


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
    # The fix plan in its JSON form (tfretrace.fix.plan.PlanStep.to_dict), ranked by savings.
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
        """
        best: tuple[float, int, float, str] | None = None
        for step in self.plan:
            try:
                before = int(step["traces_before"])
                removed = before - int(step["traces_after"])
                key = (removed / max(before, 1), removed, float(step.get("seconds_saved", 0)), str(step["cause"]))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # a malformed step (a foreign session) ranks nothing
            if removed > 0 and (best is None or key[:3] > best[:3]):
                best = key
        if best is not None:
            return best[3]
        counts: dict[str, int] = {}
        for event in self.events:
            if event.is_retrace:
                counts[event.cause] = counts.get(event.cause, 0) + 1
        if counts:
            return max(counts, key=lambda k: (counts[k], k))
        if self.xla_recompiles:  # never retraced, but XLA compiled a trace again: one answer everywhere
            from tfretrace.records.xla_events import RECOMPILE

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

    def _repr_html_(self) -> str:
        """Jupyter: this function's part of the HTML report, in a frame, offline."""
        from tfretrace.render.notebook import function_session, report_frame  # display hook

        return report_frame(function_session(self))

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
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "function") -> FunctionReport:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        from tfretrace.records.xla_events import XlaEvent

        data = C.mapping(data, where)
        keras = data.get("keras")
        return cls(
            name=C.text(data.get("name"), f"{where}.name"),
            location=C.text(data.get("location"), f"{where}.location"),
            calls=C.count(data.get("calls"), f"{where}.calls"),
            traces=C.count(data.get("traces"), f"{where}.traces"),
            trace_seconds=C.seconds(data.get("trace_seconds"), f"{where}.trace_seconds"),
            objects=C.count(data.get("objects", 1), f"{where}.objects"),
            events=tuple(
                TraceEvent.from_dict(e, f"{where}.events[{i}]")
                for i, e in enumerate(C.items(data.get("events", []), f"{where}.events"))
            ),
            keras=None if keras is None else KerasInfo.from_dict(keras, f"{where}.keras"),
            failed_traces=C.count(data.get("failed_traces", 0), f"{where}.failed_traces"),
            refused_traces=C.count(data.get("refused_traces", 0), f"{where}.refused_traces"),
            earlier_traces=C.count(data.get("earlier_traces", 0), f"{where}.earlier_traces"),
            dropped_events=C.count(data.get("dropped_events", 0), f"{where}.dropped_events"),
            retrace_count=C.optional_count(data.get("retraces"), f"{where}.retraces"),
            worker=C.optional_text(data.get("worker"), f"{where}.worker"),
            plan=tuple(
                _plan_step(step, f"{where}.plan[{i}]")
                for i, step in enumerate(C.items(data.get("plan") or [], f"{where}.plan"))
            ),
            xla_compiles=C.count(data.get("xla_compiles", 0), f"{where}.xla_compiles"),
            xla_compile_seconds=C.seconds(data.get("xla_compile_seconds", 0.0), f"{where}.xla_compile_seconds"),
            xla_events=tuple(
                XlaEvent.from_dict(e, f"{where}.xla_events[{i}]")
                for i, e in enumerate(C.items(data.get("xla_events", []), f"{where}.xla_events"))
            ),
            megamorphic=C.texts(data.get("megamorphic", []), f"{where}.megamorphic"),
            key=None if data.get("key") is None else FunctionKey.from_dict(data["key"], f"{where}.key"),
        )
