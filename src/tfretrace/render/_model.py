"""Presentation helpers every renderer shares: ranking, event grouping, filtering and formats."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from tfretrace._util.text import plural, printable
from tfretrace.records import catalogue
from tfretrace.records.cause import Cause
from tfretrace.records.events import KerasInfo, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.plan_view import BY_TOOL, StepView, numbered, plan_steps, render_counts
from tfretrace.records.session import Session
from tfretrace.records.xla_events import FIRST_COMPILE, RECOMPILE, XlaEvent

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


_T = TypeVar("_T")


def printable_copy(value: _T) -> _T:
    """A copy of a session (or any record in it) whose every string is safe for a terminal.

    Names, call sites, notes and reprs come from the user's program or a loaded file; an ESC
    or OSC sequence in one of them must be shown, not obeyed (window title, OSC 52 clipboard).
    """
    return _clean(value)  # type: ignore[no-any-return]


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, tuple):
        return tuple(_clean(v) for v in value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):  # fix plan steps
        return {k: _clean(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _clean(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return replace(value, **fields)
    return value


def ranked_functions(session: Session) -> list[FunctionReport]:
    """Functions in the order of :meth:`Session.summary`: costliest tracing + XLA compiling first."""
    return sorted(
        session.functions,
        key=lambda f: (-(f.trace_seconds + f.xla_compile_seconds), -f.traces, f.display_name(), f.worker or ""),
    )


def xla_recompiles(report: FunctionReport) -> int:
    """XLA compiles beyond the first of each trace (the ones to fix)."""
    return report.xla_recompiles


def recompile_events(report: FunctionReport) -> list[XlaEvent]:
    """The kept XLA events that are recompiles (a trace's first compile is expected, not shown)."""
    return [e for e in report.xla_events if e.cause != FIRST_COMPILE]


def retracing_functions(session: Session) -> list[FunctionReport]:
    """The ranked functions that traced more than the expected first time, or XLA recompiled."""
    return [f for f in ranked_functions(session) if f.retraces > 0 or xla_recompiles(f) > 0]


def xla_stats(report: FunctionReport) -> str:
    """``XLA compiles 6 (4 recompiles), 490.1 ms compiling``; empty without XLA compiles."""
    if not report.xla_compiles:
        return ""
    return (
        f"XLA compiles {report.xla_compiles} ({plural(xla_recompiles(report), 'recompile')}), "
        f"{fmt_seconds(report.xla_compile_seconds)} compiling"
    )


def megamorphic_line(report: FunctionReport) -> str:
    """The warning for clusters TensorFlow would stop compiling under auto-clustering."""
    if not report.megamorphic:
        return ""
    return (
        f"megamorphic XLA cluster(s) {', '.join(report.megamorphic)}: compiled more than 10 "
        "times with fewer than 50 calls per compile (under auto-clustering TensorFlow stops "
        "compiling them)"
    )


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


def fmt_share(share: float) -> str:
    """A fraction of wall time as a percentage (``18.2%``)."""
    return f"{share * 100:.1f}%"


def share_of_wall(report: FunctionReport, session: Session) -> float:
    """The fraction of its process's wall time spent tracing this function (its worker's, merged)."""
    return session.share_of_wall(report)


def keras_line(keras: KerasInfo) -> str:
    """``model 'encoder' (Functional, built at app.py:40) predict``."""
    built = f", built at {keras.built_at}" if keras.built_at else ""
    return f"model {keras.model!r} ({keras.model_class}{built}) {keras.method}"


def label(report: FunctionReport) -> str:
    """The display name, prefixed by the worker when sessions were merged."""
    name = report.display_name()
    return f"[{report.worker}] {name}" if report.worker else name


def summary_line(session: Session) -> str:
    """``3 functions, 41 traces (37 retraces), 2.41 s tracing (18.2% of 13.2 s)``: of the run's wall time."""
    functions = plural(len(session.functions), "function")
    tracing = sum(f.trace_seconds for f in session.functions)
    # Merged workers: all their tracing over all their walls, never over one worker's wall.
    wall = session.process_seconds
    share = tracing / wall if wall > 0 else 0.0
    walls = f", {len(session.workers)} workers" if session.worker_walls else ""
    # The share is of the run's wall time: the line must fit 80 columns for a small run.
    line = (
        f"{functions}, {plural(session.total_traces, 'trace')} "
        f"({plural(session.total_retraces, 'retrace')}), "
        f"{fmt_seconds(tracing)} tracing ({fmt_share(share)} of "
        f"{fmt_seconds(wall)}{walls})"
    )
    compiles = sum(f.xla_compiles for f in session.functions)
    if compiles:
        recompiles = sum(xla_recompiles(f) for f in session.functions)
        seconds = sum(f.xla_compile_seconds for f in session.functions)
        line += (
            f"; {plural(compiles, 'XLA compile')} ({plural(recompiles, 'recompile')}), "
            f"{fmt_seconds(seconds)} compiling"
        )
    return line


def xla_event_line(event: XlaEvent) -> str:
    """``XLA #3 xla-recompile  80.1 ms  (trace #2, compared with XLA #2)``."""
    where = f"trace #{event.trace}"
    if event.closest is not None:
        where += f", compared with XLA #{event.closest}"
    return f"XLA #{event.index} {event.cause}  {fmt_seconds(event.seconds)}  ({where})"


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
    recompiles = xla_recompiles(report)
    if recompiles:
        counts[RECOMPILE] = recompiles
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
    the one that differs. A fix the function's plan already shows is not repeated.
    """
    shown: dict[int, str] = {}
    previous: str | None = None
    in_plan = {step.code for step in plan_steps(report) if step.code}
    for event in report.events:
        if event.fix and event.fix != previous and event.fix not in in_plan:
            shown[event.index] = event.fix
        if event.fix:
            previous = event.fix
    return shown


def analysis_notes(session: Session) -> list[str]:
    """What the analysis after the program did that the program could see (its bodies run again)."""
    if not session.probe_traces:
        return []
    return [
        # One line: the long form (prints hidden; logs, files and counters see it) is in docs/fix-plan.md.
        f"checking the plans ran the bodies' Python {plural(session.probe_traces, 'more time')} after the program"
    ]


def cause_title(slug: str) -> str:
    """The catalogue title of a cause slug, or the slug itself when unknown."""
    try:
        return catalogue.get(slug).title
    except KeyError:
        return slug


# What the headline says instead of "with tfretrace fix --apply" when the run was not saved.
UNSAVED = " with tfretrace fix"
SAVE_HINT = " (save the run with --save FILE to apply)"


def plan_headline(steps: list[StepView], saved: bool = True) -> str:
    """``Fix plan: 24 traces -> 3 with tfretrace fix --apply, -> 1 with step 3 by hand, saves 1.26 s``, or why none.

    Without a saved session (``run`` without ``--save``) there is nothing to apply: the
    headline says to save the run instead of naming ``--apply``.
    """
    headline = _headline(steps)
    if saved or APPLY not in headline:
        return headline
    return headline.replace(APPLY, UNSAVED) + SAVE_HINT


APPLY = " with tfretrace fix --apply"


def _headline(steps: list[StepView]) -> str:
    counts = render_counts(tuple(steps))
    # XLA steps are alternatives to each other (bucket, or XLA off): only the best one counts.
    saved = sum(s.seconds_saved for s in steps if s.compiles_before is None) + max(
        (s.seconds_saved for s in steps if s.compiles_before is not None), default=0.0)
    if not counts:
        xla = [(n, s) for n, s in numbered(steps) if s.compiles_before is not None]
        if len(xla) == 1:
            step = xla[0][1]
            return (f"Fix plan: {step.compiles_before} XLA compiles -> {step.compiles_after}, "
                    f"saves {fmt_seconds(step.seconds_saved)}")
        if xla:  # XLA steps are alternatives (bucket the shapes, or XLA off): each one's count, joined by "or"
            best = max((s for _n, s in xla), key=lambda s: s.seconds_saved)
            counts = " or ".join(f"-> {s.compiles_after} with step {n}" for n, s in xla)
            return (f"Fix plan: {xla[0][1].compiles_before} XLA compiles {counts}, "
                    f"saves up to {fmt_seconds(best.seconds_saved)}")
        return "Fix plan: no fix is predicted to remove a trace"
    return f"Fix plan: {counts}, saves {fmt_seconds(saved)}"


def numbered_steps(steps: Sequence[StepView]) -> list[tuple[int, StepView]]:
    """Each step with its number: fix steps count 1, 2, ...; a note keeps the number before it."""
    return numbered(steps)


def step_line(number: int, step: StepView) -> str:
    """``1. python-value-changed: pass lr as a tensor ... (24 -> 8 traces, saves 874.0 ms)``."""
    if step.kind == "statement":
        return f"note ({step.cause}): {step.summary}"
    if step.compiles_before is not None:
        return (
            f"{number}. {step.cause}: {step.summary} ({step.compiles_before} -> "
            f"{plural(step.compiles_after or 0, 'XLA compile')}, saves {fmt_seconds(step.seconds_saved)})"
        )
    final = ", final" if step.final else ""
    verified = "" if step.verified is None else f", measured {step.verified}"
    # The noun agrees with the count next to it: "8 -> 1 trace", "3 -> 3 traces".
    after = plural(step.traces_after, "trace")
    return (
        f"{number}. {step.cause}{final}: {step.summary} "
        f"({step.traces_before} -> {after}{verified}, saves {fmt_seconds(step.seconds_saved)})"
    )


def step_where(step: StepView) -> str:
    """``edits: train.py:74, train.py:41``, the same for an unsafe step with its reason, or ``advice: ...``."""
    if step.kind == "statement":
        return ""
    if not step.edits:
        if step.by == BY_TOOL:
            return "made by tfretrace fix --apply through another function's edit"
        return "advice: edit by hand (not applied by tfretrace fix)"
    places = ", ".join(dict.fromkeys(f"{e.path}:{e.line}" for e in step.places))
    if step.tier == 1:
        # Written only with --unsafe-fixes: the reason is the step's own (docs/fix-catalogue.md).
        return f"edits (with --unsafe-fixes only): {places}; unsafe: {step.unsafe_reason}"
    return "edits: " + places
