"""Plain records of what was traced: argument leaves, changes and trace events (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Leaf kinds. Containers are leaves too, so that a diff can say "list of len 2 -> len 3".
TENSOR = "tensor"
VARIABLE = "variable"
PYTHON = "python"
OBJECT = "object"
SPEC = "spec"
CONTAINERS = frozenset({"list", "tuple", "dict", "namedtuple", "attrs"})

# Causes that are part of normal operation, never a retrace to fix.
EXPECTED_CAUSES = frozenset({"first-trace", "variable-creation"})


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
    def from_dict(cls, data: dict[str, Any]) -> Leaf:
        """Inverse of :meth:`to_dict`."""
        shape = data.get("shape")
        return cls(
            path=str(data["path"]),
            kind=str(data["kind"]),
            dtype=data.get("dtype"),
            shape=None if shape is None else tuple(shape),
            value=data.get("value"),
            type_name=data.get("type_name"),
            ident=data.get("ident"),
            alive=data.get("alive"),
            extra=tuple(sorted((data.get("extra") or {}).items())),
        )


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
    def from_dict(cls, data: dict[str, Any]) -> Change:
        """Inverse of :meth:`to_dict`."""
        return cls(
            str(data["path"]),
            str(data["kind"]),
            str(data["before"]),
            str(data["after"]),
            str(data.get("detail", "")),
        )


@dataclass(frozen=True)
class TraceEvent:
    """One trace of one tf.function: why it happened, what it cost, and how to avoid it."""

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
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceEvent:
        """Inverse of :meth:`to_dict`."""
        traced = data.get("traced_as")
        return cls(
            index=int(data["index"]),
            cause=str(data["cause"]),
            seconds=float(data["seconds"]),
            time=float(data.get("time", 0.0)),
            call_site=data.get("call_site"),
            signature=tuple(Leaf.from_dict(d) for d in data.get("signature", [])),
            changes=tuple(Change.from_dict(d) for d in data.get("changes", [])),
            fix=data.get("fix"),
            calls_since_previous=data.get("calls_since_previous"),
            calls_total=data.get("calls_total"),
            object_index=int(data.get("object", 1)),
            closest=tuple(data.get("closest", [])),
            traced_as=None if traced is None else tuple(Leaf.from_dict(d) for d in traced),
            context=tuple(sorted((data.get("context") or {}).items())),
            thread=data.get("thread"),
            raw_key=data.get("raw_key"),
            note=data.get("note"),
            nested=bool(data.get("nested", False)),
            keras=None if data.get("keras") is None else KerasInfo.from_dict(data["keras"]),
            expected=bool(data.get("expected", data["cause"] in EXPECTED_CAUSES)),
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
    def from_dict(cls, data: dict[str, Any]) -> KerasInfo:
        """Inverse of :meth:`to_dict`."""
        return cls(
            str(data["model"]),
            str(data["model_class"]),
            str(data["method"]),
            data.get("built_at"),
            data.get("epoch"),
            data.get("step"),
        )


@dataclass(frozen=True)
class FunctionReport:
    """Everything recorded for one piece of traced Python code (all its tf.function objects)."""

    name: str
    location: str
    calls: int
    traces: int
    trace_seconds: float
    objects: int
    events: tuple[TraceEvent, ...]
    keras: KerasInfo | None = None
    failed_traces: int = 0
    dropped_events: int = 0
    worker: str | None = None

    @property
    def retraces(self) -> int:
        """Traces that were not expected (first trace, variable creation, one per replica device)."""
        return sum(1 for e in self.events if e.is_retrace)

    @property
    def main_cause(self) -> str | None:
        """The most frequent cause among the retraces, or None when nothing retraced."""
        counts: dict[str, int] = {}
        for event in self.events:
            if event.is_retrace:
                counts[event.cause] = counts.get(event.cause, 0) + 1
        if not counts:
            return None
        return max(counts, key=lambda k: (counts[k], k))

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

    def to_dict(self) -> dict[str, Any]:
        """JSON form of one function (schema 1)."""
        return {
            "name": self.name,
            "display_name": self.display_name(),
            "location": self.location,
            "calls": self.calls,
            "traces": self.traces,
            "failed_traces": self.failed_traces,
            "trace_seconds": round(self.trace_seconds, 6),
            "objects": self.objects,
            "keras": None if self.keras is None else self.keras.to_dict(),
            "main_cause": self.main_cause,
            "dropped_events": self.dropped_events,
            "worker": self.worker,
            "events": [e.to_dict() for e in self.events],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FunctionReport:
        """Inverse of :meth:`to_dict`."""
        keras = data.get("keras")
        return cls(
            name=str(data["name"]),
            location=str(data["location"]),
            calls=int(data["calls"]),
            traces=int(data["traces"]),
            trace_seconds=float(data["trace_seconds"]),
            objects=int(data.get("objects", 1)),
            events=tuple(TraceEvent.from_dict(e) for e in data.get("events", [])),
            keras=None if keras is None else KerasInfo.from_dict(keras),
            failed_traces=int(data.get("failed_traces", 0)),
            dropped_events=int(data.get("dropped_events", 0)),
            worker=data.get("worker"),
        )
