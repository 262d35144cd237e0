"""One trace budget's counting and enforcement on monitors."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tfretrace._util.text import printable, split_site
from tfretrace.budget.errors import PREFIX, WARN_PREFIX, BudgetExceededError
from tfretrace.budget.xla import XlaLimit
from tfretrace.records.errors import RetracingWarning
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.runtime.monitor import FunctionState, Monitor, format_event

# The second trace of a first call that creates tf.Variables is how TensorFlow works, not a
# retrace anybody can avoid: budgets never count it.
UNCOUNTED = frozenset({"variable-creation"})
# A warn-only budget over a long run can be breached thousands of times: keep the first errors
# (each holds its message and event), count all of them exactly.
KEPT_VIOLATIONS = 20

Key = tuple[str, int, str]


def function_key(fn: Any) -> Key:
    """The (file, first line, qualname) the monitor files traces of this function under."""
    # The adapter's own unwrapping, so that the key is the one the trace hook computes.
    from tfretrace._tf.frames import innermost_code

    target = getattr(fn, "python_function", fn)  # a tf.function object: its Python function
    code, qualname = innermost_code(target)
    if code is None:
        raise TypeError(
            f"tfretrace.budget needs a Python function or a tf.function, got {type(fn).__name__}"
        )
    return (code.co_filename, code.co_firstlineno, qualname)


class Limit:
    """Counts the traces of matching functions on monitors and enforces a maximum per function.

    Matches every function, those whose code is in ``keys``, or those whose qualified name is
    (or ends with ``.``) one of ``names``. Counts are per function code, over every tf.function
    object of that code. ``origin`` says in the error where the budget was declared.

    ``existing``: the traces a function already has when the budget first counts one of its
    traces (made before the budget, by TensorFlow before any monitor, or recorded by the
    monitor earlier) count against the budget too, so that ``max_traces=N`` bounds all the
    traces the function has. Without it only the traces made under the budget count.
    """

    def __init__(
        self,
        max_traces: int | None,
        *,
        warn_only: bool = False,
        keys: Iterable[Key] = (),
        names: Iterable[str] = (),
        origin: str = "tfretrace.budget",
        thread: int | None = None,
        max_xla_compiles: int | None = None,
        existing: bool = False,
    ) -> None:
        for name, value in (("max_traces", max_traces), ("max_xla_compiles", max_xla_compiles)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        if max_traces is None and max_xla_compiles is None:
            raise ValueError("a budget needs max_traces or max_xla_compiles")
        # None: traces are not limited (a budget on XLA compiles only).
        self.max_traces = max_traces
        self.max_xla_compiles = max_xla_compiles
        self.xla = XlaLimit(self)
        self.warn_only = warn_only
        self.keys = frozenset(keys)
        self.names = tuple(names)
        self.origin = origin
        self.armed = True
        # A block budget counts only the traces made by the thread inside the block.
        self.thread = thread
        self.counts: dict[Key, int] = {}
        self.existing = existing
        # Per function, how many of its counted traces it had before the budget met it, and
        # the traces other threads made under the budget: neither before it nor its own.
        self.before: dict[Key, int] = {}
        self.foreign: dict[Key, int] = {}
        # The first KEPT_VIOLATIONS breaches; every breach is counted in violation_count and,
        # per (function, cause), in refused.
        self.violations: list[BudgetExceededError] = []
        self.violation_count = 0
        self.refused: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def matches(self, state: FunctionState) -> bool:
        """Whether traces of this function count against the budget."""
        if self.thread is not None and threading.get_ident() != self.thread:
            return False
        return self.covers(state)

    def covers(self, state: FunctionState) -> bool:
        """Whether the budget is about this function, whatever the thread."""
        if not self.keys and not self.names:
            return True
        if state.key in self.keys:
            return True
        return any(state.name == n or state.name.endswith("." + n) for n in self.names)

    def attach(self, monitor: Monitor) -> None:
        """Enforce on the traces (and XLA compiles) this monitor receives."""
        monitor.add_listener(self._check, before_trace=True)
        monitor.add_listener(self._record)
        # Always: a re-declared decorator budget may gain max_xla_compiles later, and the
        # listener returns at once while the budget has none.
        monitor.add_xla_listener(self.xla.on_compile)

    def detach(self, monitor: Monitor) -> None:
        """Stop enforcing on this monitor."""
        monitor.remove_listener(self._check)
        monitor.remove_listener(self._record)
        monitor.remove_xla_listener(self.xla.on_compile)

    def reset(self) -> None:
        """Forget the counts and the violations."""
        with self._lock:
            self.counts.clear()
            self.before.clear()
            self.foreign.clear()
            self.violations.clear()
            self.violation_count = 0
            self.refused.clear()
        self.xla.reset()

    def total(self) -> int:
        """Counted traces over all functions."""
        return sum(self.counts.values())

    def _check(self, state: FunctionState, event: TraceEvent) -> None:
        # pytest shows the test's own line and this error's explanation, not tfretrace's frame.
        __tracebackhide__ = True
        if not self.armed or event.cause in UNCOUNTED or event.warmup or not self.matches(state):
            return
        with self._lock:
            count = self._met(state)
        if self.max_traces is None or count < self.max_traces:
            return
        event = _with_checked_fix(state, event)
        error = BudgetExceededError.create(
            self.message(state, event, count + 1),
            function=state.name,
            cause=event.cause,
            count=count + 1,
            max_traces=self.max_traces,
            event=event,
        )
        with self._lock:
            self.violation_count += 1
            where = (state.name, event.cause)
            self.refused[where] = self.refused.get(where, 0) + 1
            if len(self.violations) < KEPT_VIOLATIONS:
                self.violations.append(error)
        if not self.warn_only:
            raise error
        warning = RetracingWarning.create(
            WARN_PREFIX + str(error)[len(PREFIX):], function=state.name, cause=event.cause, event=event
        )
        filename, lineno = split_site(event.call_site)
        warnings.warn_explicit(warning, RetracingWarning, filename, lineno, module="tfretrace")

    def count_violation(self, error: BudgetExceededError) -> None:
        """Count a breach found outside the trace path (an XLA compile: it happened, not refused)."""
        with self._lock:
            self.violation_count += 1
            if len(self.violations) < KEPT_VIOLATIONS:
                self.violations.append(error)

    def _met(self, state: FunctionState, recorded: int = 0) -> int:
        """The function's count, starting it from the traces it already has (``existing``).

        ``recorded``: how many of the state's traces are the one being counted (1 after it).
        """
        count = self.counts.get(state.key)
        if count is None:
            count = 0
            if self.existing:
                # Before this trace: the monitor's record, earlier traces read from the cache
                # included, less the variable-creation traces no budget counts.
                uncounted = sum(state.by_cause.get(c, 0) for c in UNCOUNTED) + state.warmups
                count = state.traces - recorded - uncounted - self.foreign.get(state.key, 0)
                self.before[state.key] = count
            self.counts[state.key] = count
        return count

    def _record(self, state: FunctionState, event: TraceEvent) -> None:
        if not self.armed or event.cause in UNCOUNTED or event.warmup or not self.covers(state):
            return
        with self._lock:
            if not self.matches(state):
                if self.existing and state.key not in self.counts:
                    self.foreign[state.key] = self.foreign.get(state.key, 0) + 1
                return
            self.counts[state.key] = self._met(state, recorded=1) + 1

    def message(self, state: FunctionState, event: TraceEvent, count: int) -> str:
        """The error text: which budget, which trace, why it happened and how to avoid it."""
        head = (
            f"{PREFIX} {state.name} ({state.location}) would trace {_ordinal(count)} time, "
            f"cause {event.cause}; budget {self.origin} allows {self.max_traces}"
        )
        lines = [head, f"  called at {event.call_site or '?'}"]
        body = format_event(state.name, state.location, event).split("\n", 1)
        if len(body) == 2:
            lines.append(body[1])
        if event.cause == "first-trace":
            lines.append("  max_traces=0 allows no trace at all: call the function once before the budget")
        before = self.before.get(state.key, 0)
        if before:
            lines.append(f"  {before} of the counted traces were made before this budget met the function")
        lines.append(
            "  counted: every trace of this code by any tf.function object, except the expected"
            " variable-creation trace; TensorFlow did not trace, so its cache is unchanged"
        )
        return printable("\n".join(lines))


def _with_checked_fix(state: FunctionState, event: TraceEvent) -> TraceEvent:
    # The refused trace's fix comes from the fix plan over this function's history and this call,
    # checked like every plan; without one, the message explains and shows no fix.
    try:
        report = FunctionReport(
            name=state.name, location=state.location, calls=0, traces=state.traces,
            trace_seconds=state.seconds, objects=state.objects, events=tuple(state.events()), keras=state.keras,
        )
        # The planner loads only when a budget is exceeded: importing tfretrace stays light.
        from tfretrace.fix.planning.plan import fix_for

        return replace(event, fix=fix_for(report, event))
    except Exception:
        return event


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"a {n}{suffix}"
