"""Replay a function's recorded calls through TensorFlow's cache rules to predict its trace count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tfretrace.fix.core.rules import Signature, covers, generalize, literal_key
from tfretrace.records.events import CONTAINERS, OBJECT, PYTHON, SPEC, TENSOR, VARIABLE, Leaf, TraceEvent
from tfretrace.records.function_report import FunctionReport

# The cache is keyed by (FunctionContext, FunctionType). The scope type is left out of the key
# here because the extra variable-creation trace is counted on its own (see calls_of).
_CONTEXT_KEYS = ("device", "graph", "cross_replica", "xla", "variable_policy", "colocation")


@dataclass(frozen=True)
class Call:
    """One recorded call that traced: which tf.function object, in which context, with what signature."""

    index: int
    obj: int
    context: tuple[tuple[str, str], ...]
    signature: Signature
    site: str | None
    seconds: float


@dataclass(frozen=True)
class Config:
    """How the tf.function is declared: reduce_retracing, and an input_signature if any."""

    reduce_retracing: bool = False
    input_signature: Signature | None = None


@dataclass(frozen=True)
class Replay:
    """The calls of one function and the traces that are not the calls' doing."""

    calls: tuple[Call, ...]
    # Extra traces a first call makes when it creates variables: one per tf.function object.
    variable_traces: int = 0
    # Traces tf.saved_model.save made to write the function's signatures (not calls to replay).
    saving_traces: int = 0
    # Of those, the calls another function made while the save traced it (an export wrapper
    # calling the model): their signature had not been seen before.
    save_calls: tuple[Call, ...] = ()

    def with_calls(self, calls: Sequence[Call]) -> Replay:
        """The same replay over other calls (a fix changed or removed some)."""
        return replace(self, calls=tuple(calls))


def calls_of(report: FunctionReport) -> Replay:
    """The calls that traced, oldest first, from the function's kept events."""
    calls: list[Call] = []
    save_calls: list[Call] = []
    variable_traces = saving_traces = 0
    seen: dict[str, set[int]] = {}
    signatures: set[tuple[object, ...]] = set()
    for event in report.events:
        if event.cause == "variable-creation":
            variable_traces += 1
            continue
        call = _call(event, seen)
        key = _norm(call.signature)
        new = key not in signatures
        signatures.add(key)
        if _in_save(event):
            # Made in the save context, whose cache is not the calls': not a call to replay. A
            # signature no earlier trace had is a call from a function the save traced (measured
            # on tensorflow/docs mlp_core: the export wrapper's call, then every cached signature
            # again, that one included).
            saving_traces += 1
            if new:
                save_calls.append(call)
            continue
        calls.append(call)
    return Replay(tuple(calls), variable_traces, saving_traces, tuple(save_calls))


def _in_save(event: TraceEvent) -> bool:
    """A trace made inside tf.saved_model.save: the serialization re-trace, or a retrace an export
    wrapper caused there (its context carries the save's variable policy, None outside a save)."""
    if event.cause == "saved-model-export":
        return True
    return dict(event.context).get("variable_policy", "None") not in ("None", "")


def _call(event: TraceEvent, seen: dict[str, set[int]]) -> Call:
    context = tuple((k, v) for k, v in event.context if k in _CONTEXT_KEYS)
    renewed = {c.path for c in event.changes if c.kind == "identity"}
    signature: list[Leaf] = []
    for leaf in event.signature:
        if leaf.kind == OBJECT and leaf.ident is not None:
            known = seen.setdefault(leaf.path, set())
            if leaf.path in renewed and leaf.ident in known:
                # A new object at the address of a dead one (CPython reuses ids): not the same object.
                leaf = replace(leaf, ident=-(event.index * 1000 + len(signature)))
            known.add(leaf.ident or 0)
        signature.append(leaf)
    return Call(event.index, event.object_index, context, tuple(signature), event.call_site, event.seconds)


def count(replay: Replay, config: Config) -> int | None:
    """Traces TensorFlow makes for these calls under ``config``; None if a call breaks the input_signature."""
    tables: dict[tuple[int, tuple[tuple[str, str], ...]], _Table] = {}
    traces = 0
    for call in replay.calls:
        table = tables.setdefault((call.obj, call.context), _Table())
        if config.input_signature is not None:
            if not covers(config.input_signature, call.signature):
                return None  # TypeError: "Binding inputs to tf.function failed ..."
            target: Signature = config.input_signature
        else:
            target = call.signature
        if table.serves(target):
            continue
        if config.reduce_retracing and config.input_signature is None:
            target = generalize(target, table.alike(target))
        table.add(target)
        traces += 1
    objects = len({call.obj for call in replay.calls}) or 1
    if config.input_signature is not None:
        if not all(covers(config.input_signature, c.signature) for c in replay.save_calls):
            return None
        # Measured: with an input_signature a save traces each trace once, whoever calls it.
        saving = min(replay.saving_traces, traces)
    elif not replay.save_calls:
        # The common case, kept off the cache scan below: count() runs once per candidate fix.
        saving = min(replay.saving_traces, traces)
    else:
        # A save's own calls (an export wrapper calling the function) trace in the save context,
        # then each distinct signature in the cache, theirs included, is traced again once (the
        # next save finds them cached): never more than the recorded save traced again.
        fresh = {_norm(c.signature) for c in replay.save_calls}
        cached = {entry for table in tables.values() for entry in table.entries()}
        again = traces + len(fresh - cached)
        saving = len(fresh) + min(replay.saving_traces - len(replay.save_calls), again)
    return traces + min(replay.variable_traces, objects) + saving


class _Table:
    """One cache (object, context): its traces in order, with a fast exact index.

    A trace with every dimension known (and every object alive) covers exactly the calls equal to
    it under TF's rules, so those are found by one set lookup; only traces with an open dimension
    are scanned. This keeps a 500-trace storm's replay linear instead of quadratic.
    """

    def __init__(self) -> None:
        self._closed: set[tuple[object, ...]] = set()
        self._open: list[Signature] = []
        self._rigid: dict[tuple[object, ...], list[Signature]] = {}

    def alike(self, request: Signature) -> list[Signature]:
        """The traces, in order, that can share a supertype with ``request``: the same non-shape parts.

        A trace with another literal, object, container or dtype has no common supertype with the
        request, so reduce_retracing's fold skips it; leaving it out gives the same result.
        """
        return self._rigid.get(_rigid(request), [])

    def serves(self, call: Signature) -> bool:
        if _norm(call) in self._closed:
            return True
        return any(covers(traced, call) for traced in self._open)

    def entries(self) -> set[tuple[object, ...]]:
        """Every trace in the cache, as compared for equality."""
        return {_norm(t) for traces in self._rigid.values() for t in traces}

    def add(self, trace: Signature) -> None:
        self._rigid.setdefault(_rigid(trace), []).append(trace)
        if _closed(trace):
            self._closed.add(_norm(trace))
        else:
            self._open.append(trace)


def _closed(signature: Signature) -> bool:
    for leaf in signature:
        if leaf.kind in (TENSOR, VARIABLE) and leaf.shape is None:
            return False
        if leaf.shape is not None and None in leaf.shape:
            return False
        if leaf.kind == SPEC and leaf.dtype is not None and leaf.shape is None:
            return False
        if leaf.kind == OBJECT and (leaf.ident is None or leaf.alive is False):
            return False
    return True


def _rigid(signature: Signature) -> tuple[object, ...]:
    out: list[object] = []
    for leaf in signature:
        if leaf.kind in (TENSOR, VARIABLE):
            out.append((leaf.path, leaf.kind, leaf.dtype, leaf.extra))
        elif leaf.kind == SPEC and leaf.dtype is not None:
            out.append((leaf.path, leaf.kind, leaf.type_name, leaf.dtype))
        elif leaf.kind == OBJECT:
            out.append((leaf.path, leaf.kind, leaf.ident if leaf.alive is not False else None))
        else:
            out.append(_norm_leaf(leaf))
    return tuple(out)


def _norm(signature: Signature) -> tuple[object, ...]:
    return tuple(_norm_leaf(leaf) for leaf in signature)


def _norm_leaf(leaf: Leaf) -> object:
    # Exactly what leaf_covers compares for a trace with no open dimension.
    kind = leaf.kind
    if kind in (TENSOR, VARIABLE):
        return (leaf.path, kind, leaf.dtype, leaf.extra, leaf.shape)
    if kind == PYTHON:
        return (leaf.path, kind, literal_key(leaf))
    if kind == OBJECT:
        return (leaf.path, kind, leaf.ident, leaf.alive is not False)
    if kind in CONTAINERS:
        return (leaf.path, kind, leaf.type_name, leaf.value)
    if kind == SPEC:
        if leaf.dtype is not None:
            return (leaf.path, kind, leaf.type_name, leaf.dtype, leaf.shape)
        return (leaf.path, kind, leaf.type_name, leaf.value, leaf.extra)
    return leaf


def mean_seconds(replay: Replay) -> float:
    """Mean seconds of one trace of this function, for the seconds a fix saves."""
    seconds = [c.seconds for c in replay.calls if c.seconds > 0]
    return sum(seconds) / len(seconds) if seconds else 0.0

