"""Presentation helpers every renderer shares: ranking, event grouping, filtering and formats."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tfretrace import catalogue
from tfretrace._cause import Cause
from tfretrace.events import FunctionReport, KerasInfo, TraceEvent
from tfretrace.session import Session

# Expected traces: shown for the timeline, never counted as something to fix.
# A run of identical causes shows this many events before collapsing into "… N more like this".
RUN_KEEP = 3
# However the causes alternate, one function never lists more than this many events.
MAX_SHOWN = 40


@dataclass(frozen=True)
class EventGroup:
    """Consecutive events of one cause: the few shown and how many were folded away."""

    cause: str
    shown: tuple[TraceEvent, ...]
    hidden: tuple[TraceEvent, ...] = ()

    def hidden_line(self) -> str:
        """``… 97 more like this (#5–#101)`` or an empty string when nothing was folded."""
        if not self.hidden:
            return ""
        first, last = self.hidden[0].index, self.hidden[-1].index
        span = f"#{first}" if first == last else f"#{first}–#{last}"
        return f"… {len(self.hidden)} more {self.cause} like this ({span})"


def ranked_functions(session: Session) -> list[FunctionReport]:
    """Functions in the order of :meth:`Session.summary`: costliest tracing first."""
    return sorted(
        session.functions,
        key=lambda f: (-f.trace_seconds, -f.traces, f.display_name(), f.worker or ""),
    )


def retracing_functions(session: Session) -> list[FunctionReport]:
    """The ranked functions that traced more than the expected first time."""
    return [f for f in ranked_functions(session) if f.retraces > 0]


def group_events(
    events: tuple[TraceEvent, ...], keep: int = RUN_KEEP, limit: int = MAX_SHOWN
) -> tuple[list[EventGroup], int]:
    """Fold runs of same-cause events after ``keep``; return the groups and events cut by ``limit``.

    A 1,000-retrace function must not flood the report: the first events of each run carry
    the information, the rest only the count.
    """
    groups: list[EventGroup] = []
    shown_total = 0
    cut = 0
    for event in events:
        if shown_total >= limit and (not groups or groups[-1].cause != event.cause):
            cut += 1
            continue
        if groups and groups[-1].cause == event.cause:
            last = groups[-1]
            if len(last.shown) < keep and not last.hidden and shown_total < limit:
                groups[-1] = replace(last, shown=(*last.shown, event))
                shown_total += 1
            else:
                groups[-1] = replace(last, hidden=(*last.hidden, event))
            continue
        groups.append(EventGroup(event.cause, (event,)))
        shown_total += 1
    return groups, cut


def hide_below(session: Session, min_traces: int) -> Session:
    """Drop functions with fewer than ``min_traces`` traces, leaving a note that says so."""
    if min_traces <= 1:
        return session
    kept = tuple(f for f in session.functions if f.traces >= min_traces)
    hidden = len(session.functions) - len(kept)
    if not hidden:
        return session
    word = "function" if hidden == 1 else "functions"
    note = f"{hidden} {word} with fewer than {min_traces} traces hidden (--min-traces)"
    return replace(session, functions=kept, notes=(*session.notes, note))


def fmt_seconds(seconds: float) -> str:
    """``12.3 ms`` below a second, ``1.23 s`` above, so small and large costs both read well."""
    if seconds < 1.0:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 100.0:
        return f"{seconds:.2f} s"
    return f"{seconds:.0f} s"


def plural(count: int, word: str) -> str:
    """``1 retrace``, ``2 retraces``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def fmt_share(share: float) -> str:
    """A fraction of wall time as a percentage (``18.2%``)."""
    return f"{share * 100:.1f}%"


def share_of_wall(report: FunctionReport, session: Session) -> float:
    """The fraction of the session's wall time spent tracing this function."""
    return report.trace_seconds / session.wall_seconds if session.wall_seconds > 0 else 0.0


def keras_line(keras: KerasInfo) -> str:
    """``model 'encoder' (Functional, built at app.py:40) predict``."""
    built = f", built at {keras.built_at}" if keras.built_at else ""
    return f"model {keras.model!r} ({keras.model_class}{built}) {keras.method}"


def label(report: FunctionReport) -> str:
    """The display name, prefixed by the worker when sessions were merged."""
    name = report.display_name()
    return f"[{report.worker}] {name}" if report.worker else name


def summary_line(session: Session) -> str:
    """``3 functions, 41 traces (37 retraces), 2.41 s tracing = 18.2% of 13.2 s wall``."""
    functions = plural(len(session.functions), "function")
    tracing = sum(f.trace_seconds for f in session.functions)
    share = tracing / session.wall_seconds if session.wall_seconds > 0 else 0.0
    return (
        f"{functions}, {plural(session.total_traces, 'trace')} "
        f"({plural(session.total_retraces, 'retrace')}), "
        f"{fmt_seconds(tracing)} tracing = {fmt_share(share)} of "
        f"{fmt_seconds(session.wall_seconds)} wall"
    )


def event_line(event: TraceEvent) -> str:
    """``#3 shape-changed  12.3 ms  at train.py:41 (calls since previous: 1)``."""
    parts = [f"#{event.index} {event.cause}", fmt_seconds(event.seconds)]
    where = f"at {event.call_site}" if event.call_site else ""
    if event.calls_since_previous is not None:
        where += f" (calls since previous: {event.calls_since_previous})"
    if where:
        parts.append(where.strip())
    return "  ".join(parts)


def event_notes(event: TraceEvent) -> list[str]:
    """The secondary lines of an event: ties, object number, generalization, thread, note."""
    notes = []
    if len(event.closest) > 1:
        ties = event.closest[1:]
        others = ", ".join(f"#{i}" for i in ties[:3])
        if len(ties) > 3:
            others += f" and {len(ties) - 3} more"
        notes.append(f"compared with #{event.closest[0]} (equally close: {others})")
    if event.object_index > 1:
        notes.append(f"tf.function object #{event.object_index} for this code")
    if event.traced_as is not None and event.is_retrace:
        generalized = ", ".join(f"{leaf.path}: {leaf.describe()}" for leaf in event.traced_as)
        notes.append(f"traced as {generalized}")
    # The context is recorded for every trace; it only explains a context change.
    if event.context and event.cause == "context-changed":
        notes.append("context " + ", ".join(f"{k}={v}" for k, v in event.context))
    if event.cause == "unexplained" and event.raw_key:
        notes.append(f"raw cache key: {event.raw_key}")
    if event.note:
        notes.append(event.note)
    return notes


def causes_of(report: FunctionReport) -> list[Cause]:
    """Catalogue entries for the function's retrace causes, most frequent first."""
    counts: dict[str, int] = {}
    for event in report.events:
        if event.is_retrace:
            counts[event.cause] = counts.get(event.cause, 0) + 1
    found = []
    for slug in sorted(counts, key=lambda s: (-counts[s], s)):
        try:
            found.append(catalogue.get(slug))
        except KeyError:
            # A session from a newer tfretrace may name a cause this version does not know.
            continue
    return found


def fixes_to_show(report: FunctionReport) -> dict[int, str]:
    """Event index -> fix code, only where it differs from the previous event's fix.

    Consecutive retraces of one cause usually carry the same fix; repeating it would hide
    the one that differs.
    """
    shown: dict[int, str] = {}
    previous: str | None = None
    for event in report.events:
        if event.fix and event.fix != previous:
            shown[event.index] = event.fix
        if event.fix:
            previous = event.fix
    return shown


def cause_title(slug: str) -> str:
    """The catalogue title of a cause slug, or the slug itself when unknown."""
    try:
        return catalogue.get(slug).title
    except KeyError:
        return slug
