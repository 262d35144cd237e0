"""Live per-function records of the monitor, with their bounds, and the cause refinements that need them."""

from __future__ import annotations

import bisect
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tfretrace.explain.analyzer import Explanation, Prior
from tfretrace.explain.diff import diff_signatures
from tfretrace.records.events import EXPECTED_CAUSES, TENSOR, VARIABLE, Change, KerasInfo, Leaf, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.xla_events import FIRST_COMPILE, RECOMPILE, XlaEvent, megamorphic

# Bounded history per function (documented in the README): the first HEAD_EVENTS events and the
# most recent max_events - HEAD_EVENTS are kept, the rest are counted in dropped_events; the
# closest-trace search looks at the last COMPARE_WINDOW traces of the function.
HEAD_EVENTS = 50
DEFAULT_MAX_EVENTS = 500
COMPARE_WINDOW = 16
_MAX_OBJECTS = 4096


@dataclass
class FunctionState:
    """Live, mutable record of one piece of traced code while monitoring."""

    key: tuple[str, int, str]
    name: str
    location: str
    max_events: int
    keras: KerasInfo | None = None
    traces: int = 0
    # Trace numbers handed out (traces begun, less those refused or failed last), and the
    # traces begun but not finished, by number.
    begun: int = 0
    inflight: dict[int, Prior] = field(default_factory=dict)
    # Exact, whatever the bounded event history keeps (the events give only the kept ones).
    retraces: int = 0
    failed_traces: int = 0
    # Traces a budget or strict mode refused before TensorFlow traced (never recorded as events).
    refused: int = 0
    seconds: float = 0.0
    objects: int = 0
    dropped: int = 0
    head: list[TraceEvent] = field(default_factory=list)
    tail: deque[TraceEvent] = field(default_factory=deque)
    priors: deque[Prior] = field(default_factory=lambda: deque(maxlen=COMPARE_WINDOW))
    object_index: OrderedDict[int, int] = field(default_factory=OrderedDict)
    counters: dict[int, tuple[Any, int]] = field(default_factory=dict)
    dead_calls: int = 0
    last_calls_total: int = 0
    keras_models: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    # XLA compiles of this function's jit_compile traces: exact totals, per-cluster counts, and
    # the events (the first HEAD_EVENTS and the last max_events - HEAD_EVENTS, like traces).
    xla_compiles: int = 0
    xla_seconds: float = 0.0
    xla_by_cluster: dict[str, int] = field(default_factory=dict)
    # The first stateful random op its traces' graphs held (_tf.draws), read as each trace was made.
    draw: str | None = None
    xla_head: list[Any] = field(default_factory=list)
    xla_tail: deque[Any] = field(default_factory=deque)
    # Earlier compiles per trace number, for explaining the next one (the last COMPARE_WINDOW).
    xla_by_trace: dict[int, deque[Any]] = field(default_factory=dict)
    # Keras rows hold several tf.functions (the loop function and the step traced inside it):
    # the code (qualified name) of each tf.function object, so each is compared with its own.
    codes: dict[int, str] = field(default_factory=dict)
    # Of ``traces``, those read from TensorFlow's cache when the monitor met an object that had
    # traced before (see _earlier); whether the last trace recorded was one (no call count to
    # measure "calls since previous" from). Exact traces per cause, earlier ones included.
    earlier: int = 0
    after_earlier: bool = False
    by_cause: dict[str, int] = field(default_factory=dict)
    # Of ``traces``, those a prevention warm-up made (no budget counts them).
    warmups: int = 0
    # Which function this is across runs (tfretrace.records.function_key.FunctionKey), made at its first trace.
    function_key: Any = None
    # keras-new-model and new-function-object traces: (trace number, the other objects' call counters and
    # their values then). A model used again after a newer one traced is in use alongside it (a DQN's
    # online and target networks; two layers of one class): the newer one is distinct, not built again.
    alongside: list[tuple[int, tuple[tuple[Any, int], ...]]] = field(default_factory=list)
    # A tf.data row: fingerprints of the data its pipelines were built from (first-seen order).
    data_sources: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def count_cause(self, cause: str) -> None:
        """Count one recorded trace of this cause."""
        self.by_cause[cause] = self.by_cause.get(cause, 0) + 1

    def record(self, event: TraceEvent, prior: Prior) -> None:
        """Count a finished trace and keep it: its event, and its key to compare later traces with."""
        self.traces += 1
        self.retraces += event.is_retrace
        self.warmups += event.warmup
        self.count_cause(event.cause)
        self.priors.append(prior)
        self.add_event(event)

    def comparable_priors(self) -> list[Prior]:
        """The traces a new trace is compared with: finished ones and those still running.

        A recursive tf.function traces itself again inside its first trace: those nested traces
        are retraces of the one still running.
        """
        return [p.as_seen_now() if p.refs else p for p in (*self.priors, *self.inflight.values())]

    def add_xla_event(self, event: Any) -> None:
        """Keep an XLA event within the same bound as trace events."""
        self.xla_by_trace.setdefault(event.trace, deque(maxlen=COMPARE_WINDOW)).append(event)
        if len(self.xla_head) < HEAD_EVENTS:
            self.xla_head.append(event)
            return
        self.xla_tail.append(event)
        if len(self.xla_tail) > self.max_events - HEAD_EVENTS:
            self.xla_tail.popleft()

    def calls(self, read: Callable[[Any], int]) -> int:
        """Calls of all tf.function objects of this code since monitoring began."""
        return self.dead_calls + sum(read(c) - base for c, base in self.counters.values())

    def events(self) -> list[TraceEvent]:
        """The kept events, oldest first."""
        return [*self.head, *self.tail]

    def add_event(self, event: TraceEvent) -> None:
        """Keep the event within the bound, in trace-number order.

        A nested trace (a recursive tf.function) finishes before the trace it started in.
        """
        if len(self.head) < HEAD_EVENTS:
            bisect.insort(self.head, event, key=lambda e: e.index)
            return
        if self.tail and self.tail[-1].index > event.index:
            at = len(self.tail)
            while at > 0 and self.tail[at - 1].index > event.index:
                at -= 1
            self.tail.insert(at, event)
        else:
            self.tail.append(event)
        if len(self.tail) > self.max_events - HEAD_EVENTS:
            self.tail.popleft()
            self.dropped += 1


_MAX_ALONGSIDE = 64
DISTINCT_MODEL_NOTE = (
    "another model from the same place, used alongside the earlier one (both called after this "
    "trace, as a DQN's online and target networks): a distinct model with its own functions"
)


DISTINCT_OBJECT_NOTE = (
    "another tf.function object of this def, used alongside the earlier ones (one of them was called after "
    "this trace, as two layers of one class are): an object with its own cache by design"
)


def note_alongside(state: FunctionState, index: int, token: int, read: Callable[[Any], int]) -> None:
    """Remember the other objects' call counts when a keras-new-model or new-function-object trace begins."""
    if len(state.alongside) >= _MAX_ALONGSIDE:
        return  # past the bound the trace keeps its cause: a rebuilt model is the common case
    others = tuple((counter, read(counter)) for t, (counter, _) in state.counters.items() if t != token)
    if others:
        state.alongside.append((index, others))


def reported_events(state: FunctionState, read: Callable[[Any], int]) -> tuple[tuple[TraceEvent, ...], int]:
    """The kept events as reported now, and how many retraces turned out to be distinct models.

    A keras-new-model trace whose earlier models were called again afterwards is that model's
    own first trace (expected). Decided when reported: the later calls are what tell.
    """
    distinct = {
        index for index, others in state.alongside if any(read(counter) > then for counter, then in others)
    }
    notes = {"keras-new-model": DISTINCT_MODEL_NOTE, "new-function-object": DISTINCT_OBJECT_NOTE}
    events = tuple(
        replace(e, cause="first-trace", changes=(), closest=(), expected=True, note=notes[e.cause])
        if e.index in distinct and e.cause in notes else e
        for e in state.events()
    )
    return events, len(distinct)


def expected_by_default(explanation: Explanation) -> bool:
    """Whether a trace with this explanation is normal operation (a first trace, a device per replica...)."""
    return explanation.cause in EXPECTED_CAUSES or _per_replica(explanation)


def _per_replica(explanation: Explanation) -> bool:
    # Under a strategy that retraces per device (MirroredStrategy), a function called from replica
    # code traces once per device: the only change is the device, and that is by design.
    return (
        explanation.cause == "context-changed"
        and bool(explanation.changes)
        and all(c.path == "<context>.device" and c.before != "default" for c in explanation.changes)
    )


def _variable_creation_clone(explanation: Explanation) -> Explanation:
    """A new tf.function object whose only difference is VARIABLE_CREATION -> NO_VARIABLE_CREATION.

    Under a distribution strategy, strategy.run inside a tf.function traces a copy of the step;
    when that step creates variables (optimizer slots), TensorFlow traces it again without
    variable creation, from another object: that is the variable-creation trace, not a new
    function object made by the user.
    """
    if explanation.cause != "new-function-object" or len(explanation.changes) != 1:
        return explanation
    change = explanation.changes[0]
    if (change.path, change.before, change.after) == (
        "<context>.scope_type", "VARIABLE_CREATION", "NO_VARIABLE_CREATION"
    ):
        return replace(explanation, cause="variable-creation")
    return explanation


def _keras_cause(
    state: FunctionState, raw: Any, explanation: Explanation, folded: bool
) -> tuple[Explanation, str | None, bool | None]:
    """The Keras reading of a trace in a Keras row: (explanation, note, expected or None for the default).

    The rule (docs/keras.md): a model's own first trace of a role is expected. A retrace is the
    same model tracing the role again (new inputs; compile() again gives it new functions), or
    a model from the same place with the same architecture doing the same inference job as an
    earlier one (built or load_model-ed per request): its predict/evaluate functions are new.
    A model trained here has its own job (k-fold, a grid search): its traces are its own.
    """
    model = raw.model_ref() if raw.model_ref is not None else None
    seen = model is not None and model in state.keras_models
    if model is not None:
        state.keras_models.add(model)
    if folded:
        # Keras' step function traced inside its loop function: one trace for the user. A new
        # step function object (compile() again, a new model) is that object's first trace.
        note = "traced inside the enclosing Keras function's trace of this row, and counted with it"
        if explanation.cause == "new-function-object":
            explanation = Explanation("first-trace", (), ())
        return explanation, note, True
    if explanation.cause != "new-function-object":
        return explanation, None, None
    if seen:
        return replace(explanation, cause="keras-recompile"), None, None
    if raw.role == "train" or raw.model_trained:
        note = (
            f"{raw.keras.model}'s own first {raw.keras.method} trace: an earlier model from the same "
            "place traced this code too, but each trained model needs its own functions"
        )
        return Explanation("first-trace", (), ()), note, True
    cause = "keras-load-model" if raw.model_loaded else "keras-new-model"
    note = (
        f"{raw.keras.model} is another model from the same place with the same layers, doing the "
        f"same {raw.keras.method} job: its functions are traced again; TensorFlow's 'N out of the "
        "last M calls triggered tf.function retracing' warning counts all such models together"
    )
    return replace(explanation, cause=cause), note, None


# Framework code traced for a call of the user's (tfretrace._tf.origins kinds): the cause of a
# trace after the row's first.
_ORIGIN_CAUSES = {"pfor": "pfor-per-call", "data": "data-pipeline-rebuilt"}
_SAVING_NOTE = (
    "traced again to be written into a SavedModel (tf.saved_model.save, model.export): expected, "
    "part of saving"
)


_SAVING_RETRACE_NOTE = (
    "made during saving (tf.saved_model.save): a caller being exported passed inputs no earlier "
    "trace covered; a retrace, not the save's own re-trace of an existing signature"
)


def _new_inputs(raw: Any, priors: Sequence[Prior]) -> bool:
    """Whether no earlier trace of this object had these inputs, in any context.

    The save traces every cached signature again in its own context: those are not new.
    """
    return not any(p.token == raw.token and tuple(p.signature) == tuple(raw.signature) for p in priors)


def _origin_cause(
    raw: Any, explanation: Explanation, priors: Sequence[Prior] = ()
) -> tuple[Explanation, str | None, bool | None]:
    """(explanation, note, expected or None for the default) of a trace made for a SavedModel or
    of framework code traced for a call of the user's (README, "Traces TensorFlow and Keras make
    for you")."""
    first = explanation.cause == "first-trace"
    if raw.saving and raw.origin != "export" and not first and _new_inputs(raw, priors):
        # Inputs no earlier trace had (an exported wrapper's input_signature calling the
        # function with (None, 784)): a real retrace, made during saving; a generalized
        # input_signature on the function removes it.
        return explanation, _SAVING_RETRACE_NOTE, None
    if raw.saving and (raw.origin == "export" or not first):
        # Serialization traces every signature again in the save context; Keras' export
        # endpoints and serving_default are new tf.functions at every save.
        return replace(explanation, cause="saved-model-export"), _SAVING_NOTE, True
    if first or raw.origin is None:
        return explanation, None, None
    framework = framework_cause(raw.origin, explanation)
    return (framework, None, False) if framework is not explanation else (explanation, None, None)


def data_source_cause(
    state: FunctionState, source: str, explanation: Explanation, note: str | None, expected: bool | None
) -> tuple[Explanation, str | None, bool | None]:
    """A tf.data build from data this row has not seen is that pipeline's own first trace.

    One helper used for several datasets (make_ds(train), make_ds(val), make_ds(test)) builds
    each once: not a rebuild. A rebuild is the same pipeline, from the same data, built again.
    """
    seen = source in state.data_sources
    state.data_sources[source] = None
    if len(state.data_sources) > _MAX_OBJECTS:
        state.data_sources.popitem(last=False)
    if seen or explanation.cause == "first-trace":
        return explanation, note, expected
    note = (
        "the first pipeline built here from this data: the same code built pipelines of other "
        "data before (one helper for several datasets); each is traced once"
    )
    return Explanation("first-trace", (), ()), note, True


def framework_cause(origin: str, explanation: Explanation) -> Explanation:
    """A retrace of framework code traced for the user's call (pfor, restored, data), by its own
    cause; the explanation itself where none applies (unexplained, a context change)."""
    cause = _ORIGIN_CAUSES.get(origin)
    if cause is not None and explanation.cause != "first-trace":
        return replace(explanation, cause=cause)
    if origin == "restored":
        if explanation.cause == "new-function-object":
            return replace(explanation, cause="restored-reloaded")
        if explanation.cause not in ("first-trace", "unexplained", "context-changed"):
            return replace(explanation, cause="restored-new-signature")
    return explanation


def compile_signature(
    trace_signature: Sequence[Leaf], args: Sequence[tuple[int, str, tuple[int, ...]]]
) -> tuple[Leaf, ...]:
    """The compile's concrete inputs as leaves named like the trace's.

    ``args`` are (input position, dtype, shape) of the non-variable inputs; the trace's tensor and
    variable leaves are its inputs in the same flat order.
    """
    inputs = [leaf for leaf in trace_signature if leaf.kind in (TENSOR, VARIABLE)]
    leaves = []
    for position, dtype, shape in args:
        path = inputs[position].path if position < len(inputs) else f"<input {position}>"
        leaves.append(Leaf(path=path, kind=TENSOR, dtype=dtype, shape=tuple(shape)))
    return tuple(leaves)


def explain_compile(
    signature: tuple[Leaf, ...], earlier: Sequence[XlaEvent]
) -> tuple[str, tuple[Change, ...], int | None]:
    """(cause, per-leaf changes, index of the closest earlier compile) for a compile of a trace.

    ``earlier`` are the compiles of the same trace; the closest is the one with the fewest
    differing leaves, the latest on a tie.
    """
    best: tuple[int, int, list[Change]] | None = None
    for event in earlier:
        changes = diff_signatures(event.signature, signature)
        key = (len(changes), -event.index)
        if best is None or key < (best[0], -best[1]):
            best = (len(changes), event.index, changes)
    if best is None:
        return FIRST_COMPILE, (), None
    return RECOMPILE, tuple(best[2]), best[1]


def report_of(state: FunctionState, read: Callable[[Any], int],
              concrete: Callable[[Any], dict[str, bool]] | None = None) -> FunctionReport:
    """The session record of one function's live state; ``read`` reads TensorFlow's call counters.

    ``concrete`` gives a call counter's get_concrete_function sites (site -> passed Python values).
    """
    calls = state.calls(read)
    python_sites: set[str] = set()
    for counter, _base in state.counters.values():
        python_sites.update(site for site, python in (concrete(counter) if concrete else {}).items() if python)
    events, distinct = reported_events(state, read)
    return FunctionReport(
        name=state.name,
        location=state.location,
        calls=calls,
        traces=state.traces,
        trace_seconds=state.seconds,
        objects=state.objects,
        events=events,
        keras=state.keras,
        failed_traces=state.failed_traces,
        dropped_events=state.dropped,
        retrace_count=state.retraces - distinct,
        xla_compiles=state.xla_compiles,
        xla_compile_seconds=state.xla_seconds,
        xla_events=(*state.xla_head, *state.xla_tail),
        megamorphic=tuple(megamorphic(state.xla_by_cluster, calls)),
        refused_traces=state.refused,
        earlier_traces=state.earlier,
        key=state.function_key,
        concrete_python_sites=tuple(sorted(python_sites)),
        draw=state.draw,
    )


def keras_rows_apart(functions: Sequence[FunctionReport]) -> tuple[FunctionReport, ...]:
    """Keras rows that would read alike (three ``sequential.fit`` at Keras' own file: a trained
    model and two reloaded ones) placed at the user's line that built or loaded each model."""
    names: dict[str, int] = {}
    for fn in functions:
        if fn.keras is not None:
            names[fn.display_name()] = names.get(fn.display_name(), 0) + 1
    return tuple(
        replace(fn, location=fn.keras.built_at)
        if fn.keras is not None and fn.keras.built_at and names[fn.display_name()] > 1
        else fn
        for fn in functions
    )

