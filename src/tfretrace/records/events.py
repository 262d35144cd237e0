"""Plain records of what was traced: argument leaves, changes and trace events (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfretrace._util import checked as C
from tfretrace.records.wording import context_line, float_text, value_pair

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

# The path of a change of the tracing context: ``<context>.scope_type``.
CONTEXT_PREFIX = "<context>."

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
            value = float_text(self.value or "") if self.type_name == "float" else self.value
            return f"Python {self.type_name} {value}"
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
            shape=None if shape is None else C.each(shape, f"{where}.shape", C.optional_count),
            value=C.optional_text(data.get("value"), f"{where}.value"),
            type_name=C.optional_text(data.get("type_name"), f"{where}.type_name"),
            ident=C.optional_count(data.get("ident"), f"{where}.ident"),
            alive=None if alive is None else C.flag(alive, f"{where}.alive"),
            extra=C.text_map(data.get("extra"), f"{where}.extra"),
        )


def _leaves(value: Any, where: str) -> tuple[Leaf, ...]:
    return C.each(value, where, Leaf.from_dict)


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
        if self.kind == "context" and self.path.startswith(CONTEXT_PREFIX):
            return context_line(self.path[len(CONTEXT_PREFIX):], self.before, self.after) + tail
        before, after = value_pair(self.before, self.after) if self.kind == "python-value" else (
            self.before, self.after)
        return f"{self.path}: {self.kind_word()} {before} -> {after}{tail}"

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
    # Made by a prevention warm-up (tfretrace run --prevent), not by a call: expected, and never
    # counted by budgets or --fail-on-retrace.
    warmup: bool = False

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
            "warmup": self.warmup,
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
            changes=C.each(data.get("changes", []), f"{where}.changes", Change.from_dict),
            fix=C.optional_text(data.get("fix"), f"{where}.fix"),
            calls_since_previous=C.optional_count(data.get("calls_since_previous"), f"{where}.calls_since_previous"),
            calls_total=C.optional_count(data.get("calls_total"), f"{where}.calls_total"),
            object_index=C.count(data.get("object", 1), f"{where}.object", low=1),
            closest=C.each(data.get("closest", []), f"{where}.closest", lambda n, at: C.count(n, at, low=1)),
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
            warmup=C.flag(data.get("warmup", False), f"{where}.warmup"),
        )


# KerasInfo.call's two verdicts where predict and the call agreed (any other text says what differed).
CALL_SAME = "same"
CALL_DIGITS = "float-last-digits"


# The dtype word the planner asks the probe, and a step records, for a Python int passed as TensorFlow converts
# one (``tf.constant(n)``): int32 where it fits, int64 beyond.
INT_AS_CONVERTED = "int"


class TraceRefused(str):
    """A probe's verdict where TensorFlow raised while tracing the function as an edit writes it: the edited
    program would fail at that call, so no phase writes the edit (by hand, with what TensorFlow said).
    A ``str``, so every reader of a verdict reads it as the sentence it is; its type is what code tests,
    and ``raised`` is the exception as TensorFlow raised it (``ValueError: Cannot infer argument ...``)."""

    raised: str

    def __new__(cls, raised: str) -> TraceRefused:
        made = super().__new__(cls, f"TensorFlow could not trace it with the signature ({raised})")
        made.raised = raised
        return made


@dataclass(frozen=True)
class KerasInfo:
    """Which Keras model and user-level method a Keras-created tf.function belongs to."""

    model: str
    model_class: str
    method: str
    built_at: str | None = None
    epoch: int | None = None
    step: int | None = None
    # predict only (Keras 3): "independent" where padding the call's rows leaves every kept row's
    # prediction as it was (tfretrace._tf.keras_rows), else why not; None where not read.
    rows: str | None = None
    # predict only, asked of the live model after the run (fix kind keras-call): CALL_SAME where
    # model.predict(x) and model(x, training=False).numpy() gave the same arrays bit for bit on every
    # input tried, CALL_DIGITS where only in the last digits, else what differed; None where not asked.
    call: str | None = None
    call_inputs: int | None = None  # on how many inputs both ran (with ``call``)

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
            **({"rows": self.rows} if self.rows is not None else {}),
            **({"call": self.call} if self.call is not None else {}),
            **({"call_inputs": self.call_inputs} if self.call_inputs is not None else {}),
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
            C.optional_text(data.get("rows"), f"{where}.rows"),
            C.optional_text(data.get("call"), f"{where}.call"),
            C.optional_count(data.get("call_inputs"), f"{where}.call_inputs"),
        )
