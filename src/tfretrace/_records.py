"""Live per-function records of the monitor, with their bounds, and the cause refinements that need them."""

from __future__ import annotations

import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tfretrace.analyzer import Explanation, Prior
from tfretrace.events import KerasInfo, Leaf, TraceEvent

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
    failed_traces: int = 0
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
    # Running generalization of every traced signature of the latest structure: what an
    # input_signature must cover. Updated per trace in O(leaves), never recomputed from history.
    general: list[Leaf] | None = None

    def calls(self, read: Callable[[Any], int]) -> int:
        """Calls of all tf.function objects of this code since monitoring began."""
        return self.dead_calls + sum(read(c) - base for c, base in self.counters.values())

    def events(self) -> list[TraceEvent]:
        """The kept events, oldest first."""
        return [*self.head, *self.tail]

    def add_event(self, event: TraceEvent) -> None:
        """Keep the event within the bound."""
        if len(self.head) < HEAD_EVENTS:
            self.head.append(event)
            return
        self.tail.append(event)
        if len(self.tail) > self.max_events - HEAD_EVENTS:
            self.tail.popleft()
            self.dropped += 1


def _per_replica(explanation: Explanation) -> bool:
    # Under a strategy that retraces per device (MirroredStrategy), a function called from replica
    # code traces once per device: the only change is the device, and that is by design.
    return (
        explanation.cause == "context-changed"
        and bool(explanation.changes)
        and all(c.path == "<context>.device" and c.before != "default" for c in explanation.changes)
    )


def _keras_cause(state: FunctionState, raw: Any, explanation: Explanation) -> tuple[Explanation, str | None]:
    # A new tf.function object for Keras trainer code means a new model, a model loaded again, or
    # compile() (which resets train/test/predict functions) on a model already seen.
    model = raw.model_ref() if raw.model_ref is not None else None
    seen = model is not None and model in state.keras_models
    if model is not None:
        state.keras_models.add(model)
    if explanation.cause != "new-function-object":
        return explanation, None
    if seen:
        return replace(explanation, cause="keras-recompile"), None
    cause = "keras-load-model" if raw.model_loaded else "keras-new-model"
    note = (
        f"{raw.keras.model} traced its {raw.keras.method} function for the first time; "
        "TensorFlow's 'N out of the last M calls triggered tf.function retracing' warning counts "
        "the traces of all models together because they share this code"
    )
    return replace(explanation, cause=cause), note
