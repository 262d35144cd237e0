"""Comparing two runs function by function: what traces more, why, and whether that is a regression."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfretrace.records.events import Change, TraceEvent
from tfretrace.records.function_key import FunctionKey
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.matching import match, moved_name, record_key
from tfretrace.records.session import Session

__all__ = [
    "NEW",
    "VANISHED",
    "Comparison",
    "Counts",
    "Delta",
    "NewCause",
    "Run",
    "compare",
    "counts_of",
    "run_of",
]

# How a function of one run relates to the other beside the matches of function_key
# (exact, moved, edited): only in the head run, or only in the base run.
NEW = "new"
VANISHED = "vanished"


@dataclass(frozen=True)
class Counts:
    """What one function cost in one run, as compare reads it (from a session or a baseline).

    ``causes`` are retraces per cause, from the kept events (a run with dropped events has the
    exact ``retraces`` but fewer in ``causes``). Seconds are None where not recorded (baselines
    leave them out: they differ on every run). ``events`` carry the explanations (sessions only).
    """

    key: FunctionKey
    name: str
    location: str = ""
    traces: int = 0
    retraces: int = 0
    causes: tuple[tuple[str, int], ...] = ()
    trace_seconds: float | None = None
    xla_compiles: int = 0
    xla_seconds: float | None = None
    events: tuple[TraceEvent, ...] = ()
    # The module-level name its fix plan moves this nested def to (sessions only; None: no such move).
    moved_to: str | None = None

    def cause_count(self, cause: str) -> int:
        """Retraces of this cause."""
        return dict(self.causes).get(cause, 0)


def cause_counts(events: list[TraceEvent] | tuple[TraceEvent, ...]) -> tuple[tuple[str, int], ...]:
    """Retraces per cause among ``events``, sorted by cause."""
    found: dict[str, int] = {}
    for event in events:
        if event.is_retrace:
            found[event.cause] = found.get(event.cause, 0) + 1
    return tuple(sorted(found.items()))


def counts_of(report: FunctionReport) -> Counts:
    """A session's function record as compare reads it."""
    return Counts(
        key=record_key(report),
        name=report.display_name(),
        location=report.location,
        traces=report.traces,
        retraces=report.retraces,
        causes=cause_counts(report.events),
        trace_seconds=report.trace_seconds,
        xla_compiles=report.xla_compiles,
        xla_seconds=report.xla_compile_seconds,
        events=report.events,
        moved_to=moved_name(report),
    )


@dataclass(frozen=True)
class Run:
    """One side of a comparison: its name (a file), its functions and the versions it ran on."""

    label: str
    functions: tuple[Counts, ...]
    tensorflow: str | None = None
    keras: str | None = None
    python: str | None = None

    def versions(self) -> dict[str, str | None]:
        """The versions a comparison names when they differ."""
        return {"TensorFlow": self.tensorflow, "Keras": self.keras, "Python": self.python}


def run_of(session: Session, label: str) -> Run:
    """A session as one side of a comparison."""
    return Run(label, tuple(counts_of(f) for f in session.functions), session.tensorflow, session.keras,
               session.python)


@dataclass(frozen=True)
class NewCause:
    """A cause that retraces more in the head run, with the first new trace's explanation."""

    cause: str
    added: int
    trace: int | None = None
    argument: str | None = None
    kind: str | None = None
    before: str | None = None
    after: str | None = None
    detail: str = ""
    call_site: str | None = None

    def change(self) -> Change | None:
        """The first new trace's first changed argument, as the session recorded it."""
        if self.argument is None:
            return None
        return Change(self.argument, self.kind or "", self.before or "", self.after or "", self.detail)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"cause": self.cause, "added": self.added, "trace": self.trace, "argument": self.argument,
                "kind": self.kind, "before": self.before, "after": self.after, "detail": self.detail,
                "call_site": self.call_site}


@dataclass(frozen=True)
class Delta:
    """One function in both runs (or one of them): base -> head, and whether it got worse."""

    base: Counts | None
    head: Counts | None
    how: str  # function_key.EXACT, MOVED, EDITED, or NEW, VANISHED
    new_causes: tuple[NewCause, ...] = ()
    worse: bool = False

    @property
    def name(self) -> str:
        """The head run's name of the function, else the base run's."""
        side = self.head or self.base
        assert side is not None
        return side.name

    @property
    def location(self) -> str:
        """Where the function is in the head run, else in the base run."""
        side = self.head or self.base
        assert side is not None
        return side.location

    def _pair(self, field: str) -> tuple[Any, Any]:
        base = getattr(self.base, field) if self.base is not None else 0
        head = getattr(self.head, field) if self.head is not None else 0
        return base, head

    @property
    def traces(self) -> tuple[int, int]:
        """(base, head) traces; 0 on the side the function is missing from."""
        return self._pair("traces")

    @property
    def retraces(self) -> tuple[int, int]:
        """(base, head) retraces."""
        return self._pair("retraces")

    @property
    def xla_compiles(self) -> tuple[int, int]:
        """(base, head) XLA compiles."""
        return self._pair("xla_compiles")

    @property
    def seconds(self) -> tuple[float | None, float | None]:
        """(base, head) seconds paid before calls could run: tracing plus XLA compiling."""
        return _cost(self.base), _cost(self.head)

    @property
    def seconds_added(self) -> float | None:
        """Head minus base seconds; None when either side did not record them."""
        base, head = self.seconds
        if (base is None and self.base is not None) or (head is None and self.head is not None):
            return None
        return (head or 0.0) - (base or 0.0)

    @property
    def changed(self) -> bool:
        """Whether any count differs (or the function is only in one run)."""
        if self.base is None or self.head is None:
            return True
        return (self.traces[0] != self.traces[1] or self.retraces[0] != self.retraces[1]
                or self.xla_compiles[0] != self.xla_compiles[1] or self.base.causes != self.head.causes)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        base_seconds, head_seconds = self.seconds
        side = self.head or self.base
        assert side is not None
        return {
            "name": self.name,
            "key": side.key.to_dict(),
            "base_key": None if self.base is None else self.base.key.to_dict(),
            "location": self.location,
            "match": self.how,
            "worse": self.worse,
            "traces": list(self.traces),
            "retraces": list(self.retraces),
            "retraces_by_cause": {
                "base": dict(self.base.causes) if self.base is not None else {},
                "head": dict(self.head.causes) if self.head is not None else {},
            },
            "seconds": [_rounded(base_seconds), _rounded(head_seconds)],
            "xla_compiles": list(self.xla_compiles),
            "new_causes": [c.to_dict() for c in self.new_causes],
        }


def _cost(side: Counts | None) -> float | None:
    if side is None or side.trace_seconds is None:
        return None
    return side.trace_seconds + (side.xla_seconds or 0.0)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True)
class Comparison:
    """Every function of two runs, base -> head, the costliest change first."""

    base: Run
    head: Run
    deltas: tuple[Delta, ...]
    tolerance: int = 0

    @property
    def worse(self) -> tuple[Delta, ...]:
        """The functions that got worse beyond the tolerance."""
        return tuple(d for d in self.deltas if d.worse)

    @property
    def new(self) -> tuple[Delta, ...]:
        """Functions only in the head run."""
        return tuple(d for d in self.deltas if d.how == NEW)

    @property
    def vanished(self) -> tuple[Delta, ...]:
        """Functions only in the base run."""
        return tuple(d for d in self.deltas if d.how == VANISHED)

    def version_changes(self) -> list[tuple[str, str | None, str | None]]:
        """(what, base, head) for each of TensorFlow, Keras, Python whose version differs."""
        base, head = self.base.versions(), self.head.versions()
        return [(name, base[name], head[name]) for name in base
                if base[name] and head[name] and base[name] != head[name]]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``tfretrace compare --format json``)."""
        return {
            "base": {"label": self.base.label, **_versions(self.base)},
            "head": {"label": self.head.label, **_versions(self.head)},
            "version_changes": [{"what": w, "base": b, "head": h} for w, b, h in self.version_changes()],
            "tolerance": self.tolerance,
            "worse": len(self.worse),
            "new": len(self.new),
            "vanished": len(self.vanished),
            "functions": [d.to_dict() for d in self.deltas],
        }


def _versions(run: Run) -> dict[str, str | None]:
    return {"tensorflow": run.tensorflow, "keras": run.keras, "python": run.python}


def compare(base: Run, head: Run, tolerance: int = 0) -> Comparison:
    """Pair the functions of two runs and say, for each, what changed and whether it got worse.

    A function got worse when it retraces, or compiles with XLA, more than ``tolerance`` times
    more than in the base run (a new function: more than ``tolerance`` retraces at all).
    """
    if tolerance < 0:
        raise ValueError("tolerance must be 0 or more")
    # A nested def that `fix --apply` moved to module level is the same function under its new name.
    matching = match(base.functions, head.functions, key=lambda c: c.key, moved_to=lambda c: c.moved_to)
    deltas = [_delta(pair.base, pair.head, pair.how, tolerance) for pair in matching.pairs]
    deltas += [_delta(None, c, NEW, tolerance) for c in matching.new]
    deltas += [Delta(c, None, VANISHED) for c in matching.vanished]
    deltas.sort(key=_cost_added)
    return Comparison(base, head, tuple(deltas), tolerance)


def _cost_added(delta: Delta) -> tuple[Any, ...]:
    # Most seconds added first; without seconds (a baseline), most retraces added. Worse ones
    # lead whatever their seconds: timings wobble, a regression does not.
    added = delta.seconds_added
    retraces = delta.retraces[1] - delta.retraces[0]
    return (not delta.worse, -(added or 0.0), -retraces, -(delta.traces[1] - delta.traces[0]), delta.name)


def _delta(base: Counts | None, head: Counts, how: str, tolerance: int) -> Delta:
    base_retraces = base.retraces if base is not None else 0
    worse = head.retraces - base_retraces > tolerance
    if base is not None and head.xla_compiles - base.xla_compiles > tolerance:
        worse = True
    causes = []
    for cause, count in head.causes:
        before = base.cause_count(cause) if base is not None else 0
        if count > before:
            causes.append(_new_cause(head, cause, count - before, before))
    causes.sort(key=lambda c: (-c.added, c.cause))
    return Delta(base, head, how, tuple(causes), worse)


def _new_cause(head: Counts, cause: str, added: int, before: int) -> NewCause:
    """The cause's first trace beyond the base run's count of it, explained by its first change."""
    events = [e for e in head.events if e.is_retrace and e.cause == cause]
    if not events:
        return NewCause(cause, added)
    event = events[min(before, len(events) - 1)]
    change = event.changes[0] if event.changes else None
    return NewCause(
        cause, added, trace=event.index,
        argument=change.path if change else None,
        kind=change.kind if change else None,
        before=change.before if change else None,
        after=change.after if change else None,
        detail=change.detail if change else "",
        call_site=event.call_site,
    )
