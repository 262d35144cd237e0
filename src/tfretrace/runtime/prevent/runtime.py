"""Prevention at run time: at a profiled tf.function's first call, one general trace; then watch its calls."""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from dataclasses import dataclass, field, replace
from typing import Any

from tfretrace.fix.core.predict import Call, Config, Replay, count
from tfretrace.fix.core.rules import Signature, covers
from tfretrace.fix.planning.step import CHANGES_RANDOM
from tfretrace.records.prevention import FunctionPrevention, PreventionReport
from tfretrace.runtime.prevent.checks import changes_of, graph_draw_change, refusal
from tfretrace.runtime.prevent.match import find
from tfretrace.runtime.prevent.profile import PREVENTABLE, Entry, Profile
from tfretrace.runtime.prevent.watchers import attach as _attach
from tfretrace.runtime.prevent.watchers import detach as _detach

_SKIP = object()
_MISSING = object()
_TOKENS = itertools.count(1)
# Cheap call keys kept per tf.function object before they are forgotten (a bound on memory).
_MAX_KEYS = 4096


@dataclass
class _Object:
    """One tf.function object met in this run: its warm-up and the distinct calls it got."""

    ref: Any
    warm: tuple[Signature, ...]
    recorded: tuple[Signature, ...]
    reduce_retracing: bool
    after_warmup: int = 0
    last_count: int = 0
    keys: dict[Any, None] = field(default_factory=dict)
    # The distinct call signatures, in the order they first came (what the replay needs).
    calls: list[Signature] = field(default_factory=list)
    seen: set[Signature] = field(default_factory=set)
    # Where each distinct signature was first called from (the as-written plan's call sites).
    sites: dict[Signature, str | None] = field(default_factory=dict)


@dataclass
class _Row:
    """What happened to one profile entry in this run (all its tf.function objects)."""

    entry: Entry
    name: str
    location: str
    fallback: str | None = None
    jit_compile: bool = False
    warmups: int = 0
    warmup_seconds: float = 0.0
    stale: bool = False
    failures: list[str] = field(default_factory=list)
    # Signatures the checks (or the rebuild) kept from warming, and why.
    not_warmed: list[str] = field(default_factory=list)
    # What warming changes in the results besides the count ("random-stream: tf.random.normal").
    changes: list[str] = field(default_factory=list)
    objects: list[_Object] = field(default_factory=list)


class Prevention:
    """Warms each profiled function once at its first call; reports what that prevented.

    Works with a running monitor (``tfretrace run``) or starts a quiet one of its own, which
    keeps TensorFlow's hooks in place and records the session the report goes into.
    """

    def __init__(self, profile: Profile, monitor: Any = None, *, learn: bool = True) -> None:
        self.profile = profile
        # Widen the profile file with the calls this run met outside it, at stop().
        self.learn = learn
        self._learned: Any = None
        self._monitor = monitor
        self._own_monitor = monitor is None
        self._rows: dict[int, _Row] = {}
        self._lock = threading.RLock()
        self.internal_errors = 0
        self.active = False
        self._token = next(_TOKENS)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Prevention:
        """Install the call watcher (and a quiet monitor when none was given)."""
        from tfretrace.runtime.monitor import Monitor

        if self._monitor is None:
            self._monitor = Monitor(warn=False, log=False).start()
        _attach(self)
        self.active = True
        return self

    def stop_watching(self) -> None:
        """Stop warming new functions and watching calls (the monitor goes on)."""
        if self.active:
            _detach(self)
            self.active = False

    def stop(self) -> Any:
        """Stop warming; return the session with this prevention's report."""
        self.stop_watching()
        session = self._monitor.stop() if self._own_monitor else self._monitor.session()
        return self.finish(session, final=True)

    def __enter__(self) -> Prevention:
        return self if self.active else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def monitor(self) -> Any:
        """The monitor whose session the report goes into."""
        return self._monitor

    def session(self) -> Any:
        """The monitor's session so far, with this prevention's report."""
        return self.finish(self._monitor.session())

    def finish(self, session: Any, *, final: bool = False) -> Any:
        """``session`` with the prevention report recorded in it (an additive field).

        ``final``: the run is over; with ``learn`` the profile file is widened with its calls.
        """
        if final and self.learn:
            from tfretrace.runtime.prevent.learn import learn

            try:
                _, self._learned = learn(self.profile, session)
            except Exception as exc:  # a profile that cannot be widened never costs the run its report
                self._error(exc)
        # Once the program has ended, TensorFlow is asked (the probe) exactly as a run without
        # prevention asks it: the plan of the program as written must not depend on --prevent.
        probe = None
        if final and getattr(self._monitor, "program_done", False):
            from tfretrace.runtime.probe import probe_live

            probe = probe_live(getattr(self._monitor, "_root", None) or os.getcwd())
        report = self.report(session.tensorflow, session, probe=probe)
        plans = {(f.name, f.location): f.plan_off for f in report.functions if f.plan_off is not None}
        # A prevented function is planned as the program is written (prevention off): that plan
        # is what fix --apply edits and what --verify measures without prevention.
        from tfretrace.fix.planning.step import fix_counts

        functions = tuple(
            replace(f, plan=plans[(f.name, f.location)], fix_counts=fix_counts(plans[(f.name, f.location)]))
            if (f.name, f.location) in plans else f
            for f in session.functions
        )
        return replace(session, functions=functions, prevention=report)

    # -- the call watcher ----------------------------------------------------------------------

    def watch_call(self, function: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> Any:
        """Before a call of any tf.function: warm it at its first call, note the call's signature."""
        try:
            # Per function object, each prevention's own state: two preventions at once (a
            # notebook's set-up cell run twice) never take each other's.
            states = function.__dict__.get("_tfretrace_prevent")
            watched = states.get(self._token, _MISSING) if states is not None else _MISSING
            if watched is _MISSING:
                if not self._eager():
                    # A call inside another trace (maybe in a replica thread while the lock is
                    # held by the warm-up that runs it): the outer function's warm-up covers it.
                    return None
                with self._lock:
                    states = function.__dict__.setdefault("_tfretrace_prevent", {})
                    watched = states.get(self._token, _MISSING)
                    if watched is _MISSING:
                        watched = self._first_call(function, args, kwds)
                        states[self._token] = watched
            if not isinstance(watched, _Object):
                return None
            return self._on_call(watched, function, args, kwds)
        except Exception as exc:  # prevention must never break the user's call
            self._error(exc)
            return None

    def _first_call(self, function: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> Any:
        from tfretrace._tf import warmup

        who = warmup.identify(function, warmup.caller_frame(), getattr(self._monitor, "_root", None) or os.getcwd())
        found = None if who.key is None else find(self.profile, who.key)
        if found is None:
            return _SKIP
        if not found.entry.worth_watching:
            return _SKIP  # nothing to prevent or to report (its calls are still learned from the session)
        row = self._rows.get(id(found.entry))
        if row is None:
            row = _Row(found.entry, who.name, who.location, found.fallback, who.jit_compile, stale=found.stale)
            self._rows[id(found.entry)] = row
        group = found.entry.group_for(who.params)
        # The fix planner's checks on the body as it is now. Keras' own train/test/predict
        # functions are not the user's code: their generalized data specs are Keras' contract.
        node = warmup.definition(function) if who.keras is None else None
        todo: list[Signature] = []
        for signature in group.warm if group is not None and not found.stale else ():
            why = refusal(node, signature) if who.keras is None else None
            if why is None:
                todo.append(signature)
            else:
                _add(row.not_warmed, why)
        before = warmup.tracing_count(function)
        done: list[Signature] = []
        if todo and found.entry.creates_variables:
            try:
                row.warmup_seconds += warmup.initialize(function, args, kwds)
            except Exception:
                return _SKIP  # the call itself fails the same way, where the user sees it
        for signature in todo:
            try:
                row.warmup_seconds += warmup.warm(function, signature)
                done.append(signature)
            except warmup.NotWarmable as exc:
                _add(row.not_warmed, f"not warmed: {exc}")
            except Exception as exc:  # the general trace failed: the calls trace as they would have
                _add(row.failures, f"warm-up trace failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                     "; the body's trace-time Python ran once for it")
        if done and node is not None:
            for change in changes_of(node):
                _add(row.changes, change)
        after = warmup.tracing_count(function)
        row.warmups += after - before
        recorded = group.recorded if group is not None else ()
        # Watched even when nothing was warmed: the report compares the same calls either way.
        obj = _Object(weakref.ref(function), tuple(done), recorded, who.reduce_retracing, after, after)
        row.objects.append(obj)
        return obj

    @staticmethod
    def _eager() -> bool:
        from tfretrace._tf.warmup import eager

        return eager()

    def _on_call(self, obj: _Object, function: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> Any:
        from tfretrace._tf import warmup

        key = warmup.call_key(args, kwds)
        if key in obj.keys:
            return None
        if len(obj.keys) >= _MAX_KEYS:
            obj.keys.clear()  # keys by identity pile up: forget them, the signatures stay exact
        obj.keys[key] = None
        signature = warmup.call_signature(function, args, kwds)
        if signature in obj.seen:
            return None
        obj.seen.add(signature)
        obj.calls.append(signature)
        obj.sites[signature] = warmup.user_site()

        def after() -> None:
            obj.last_count = warmup.tracing_count(function)

        return after

    def _error(self, exc: BaseException) -> None:
        self.internal_errors += 1
        monitor = self._monitor
        if monitor is not None:
            monitor.internal_error(exc)

    # -- the report ----------------------------------------------------------------------------

    def report(self, tensorflow: str | None = None, session: Any = None, probe: Any = None) -> PreventionReport:
        """Per profiled function met in this run: traces without and with prevention, and why.

        With the run's ``session``, each row also gets the fix plan of the program as written
        and its counts, and the retraces a warm-up cannot prevent are this run's (default: the
        monitor's session so far); ``probe`` (the program has ended) lets that plan ask TensorFlow.
        The session also tells profiled functions never traced from
        those traced only where prevention never sees a call (inside another trace, by tf.data).
        """
        if session is None and self._monitor is not None:
            session = self._monitor.session()
        notes = []
        version = self.profile.version_note(tensorflow)
        if version is not None:
            notes.append(version)
        if not self.profile.runs:
            notes.append(f"no profile yet at {self.profile.path}: this run records one")
        learned = self._learned
        if learned is not None and learned.note:
            notes.append(learned.note)
        rows = []
        with self._lock:
            met = list(self._rows.values())
        for row in met:
            rows.append(_function_row(row, _recorded(session, row), self._error, probe))
            if row.fallback:
                notes.append(f"{row.name}: {row.fallback}")
        # Profiled functions that retraced there and never ran here (eagerly) in this run.
        met_ids = {id(row.entry) for row in met}
        unmet = [e for e in self.profile.entries if e.retraces and id(e) not in met_ids]
        traced = _traced_here(unmet, session)
        if traced:
            notes.append(
                f"{traced} profiled function(s) that retraced there were traced in this run only inside "
                "other traces or by tf.data: prevention warms up functions called from Python, so it "
                "left them as they were"
            )
        not_met = len(unmet) - traced
        return PreventionReport(
            self.profile.path, self.profile.tensorflow, tuple(rows), tuple(notes), not_met,
            learned=learned.added if learned is not None and learned.written else 0,
            written=learned.written if learned is not None else None,
        )


def _traced_here(entries: list[Entry], session: Any) -> int:
    """How many of these profiled functions this run's session traced (by key, else name and place)."""
    if session is None or not entries:
        return 0
    traced = [f for f in session.functions if f.traces]
    keys = {f.key for f in traced if f.key is not None}
    places = {(f.name, f.location) for f in traced}
    return sum(1 for e in entries if e.key in keys or (e.name, e.location) in places)


def _recorded(session: Any, row: _Row) -> Any:
    """The session's record of the row's function (same name and place), or None."""
    if session is None:
        return None
    for report in session.functions:
        if report.name == row.name and report.location == row.location:
            return report
    return None


def _function_row(row: _Row, recorded: Any = None, on_error: Any = None, probe: Any = None) -> FunctionPrevention:
    without = measured = after_warmup = outside = 0
    for obj in row.objects:
        function = obj.ref()
        if function is not None:
            from tfretrace._tf.warmup import tracing_count

            obj.last_count = tracing_count(function)
            if obj.warm:
                _graph_draws(row, function)
        measured += obj.last_count
        after_warmup += obj.last_count - obj.after_warmup
        without += _replayed(obj, row.entry)
        outside += sum(1 for call in obj.calls if not any(covers(w, call) for w in (*obj.warm, *obj.recorded)))
    entry = row.entry
    unpreventable = entry.unpreventable
    plan_off, applied, least = None, None, None
    if recorded is not None:
        # This run's own retraces of the causes no warm-up prevents (warm-ups are not retraces).
        counts: dict[str, int] = {}
        for event in recorded.events:
            if event.is_retrace and event.cause not in PREVENTABLE:
                counts[event.cause] = counts.get(event.cause, 0) + 1
        unpreventable = tuple((c, n, entry.advice(c)) for c, n in sorted(counts.items()))
        if recorded.keras is None and row.objects:
            from tfretrace.runtime.prevent.as_if_off import planned_off

            # Nothing warmed: the run's own record is the program as written, call sites and all.
            warmed = any(obj.warm for obj in row.objects)
            try:
                plan_off, applied, least = planned_off(
                    recorded, [[(c, obj.sites.get(c)) for c in obj.calls] for obj in row.objects] if warmed else None,
                    entry.creates_variables, probe)
            except Exception as exc:  # the plan is extra: the report stands without it
                if on_error is not None:
                    on_error(exc)
    return FunctionPrevention(
        name=row.name,
        display_name=entry.display_name,
        location=row.location,
        objects=len(row.objects),
        warmups=row.warmups,
        warmup_seconds=row.warmup_seconds,
        traces_without=without,
        traces_with=measured,
        traces_after_warmup=after_warmup,
        calls_outside=outside,
        unpreventable=unpreventable,
        failures=tuple(row.failures),
        jit_compile=row.jit_compile,
        matched=row.fallback or "exact",
        not_warmed=tuple(row.not_warmed),
        changes=tuple(row.changes),
        stale=row.stale,
        traces_fixed=applied,
        traces_minimum=least,
        plan_off=plan_off,
    )


def _graph_draws(row: _Row, function: Any) -> None:
    """A random draw the def's source does not show (a called layer or helper), read from TensorFlow's graphs."""
    from tfretrace._tf.probe import random_op

    if any(c.startswith(CHANGES_RANDOM) for c in row.changes):
        return
    try:
        draw = random_op(function)
    except Exception:  # reading the graphs is extra: the report stands without it
        return
    if draw is not None:
        _add(row.changes, graph_draw_change(draw))


def _replayed(obj: _Object, entry: Entry) -> int:
    """The traces this object's calls make without a warm-up: TensorFlow's rules replayed."""
    calls = tuple(Call(i + 1, 1, (), sig, None, 0.0) for i, sig in enumerate(obj.calls))
    # A first call that creates variables traces once more; the profile says whether it did.
    variable = 1 if entry.creates_variables else 0
    # A save writes each cached signature again: without the warm-up, one per signature traced.
    replay = Replay(calls, variable_traces=variable, saving_traces=entry.saving_traces)
    predicted = count(replay, Config(reduce_retracing=obj.reduce_retracing))
    return predicted if predicted is not None else len(calls) + variable


def _add(items: list[str], text: str) -> None:
    if text not in items:
        items.append(text)

