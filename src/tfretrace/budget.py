"""Trace budgets: stop a run or a test the moment a tf.function traces more than it should."""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from tfretrace import monitor as _monitor
from tfretrace.errors import RetraceError, RetracingWarning
from tfretrace.events import TraceEvent
from tfretrace.monitor import FunctionState, Monitor, format_event

PREFIX = "RetraceError: budget exceeded:"
WARN_PREFIX = "RetracingWarning: budget exceeded (warn only):"
STRICT_ENV = "TFRETRACE_STRICT"
STRICT_WARN_ENV = "TFRETRACE_STRICT_WARN"
# The second trace of a first call that creates tf.Variables is how TensorFlow works, not a
# retrace anybody can avoid: budgets never count it.
UNCOUNTED = frozenset({"variable-creation"})

Key = tuple[str, int, str]
F = TypeVar("F", bound=Callable[..., Any])


_FIELDS = frozenset({"function", "cause", "count", "max_traces", "event"})


class BudgetExceededError(RetraceError):
    """A budget was exceeded; ``cause`` is the slug of the offending trace (``shape-changed``, ...).

    Also ``function`` (qualified name), ``count`` (the refused trace's number), ``max_traces`` and
    ``event`` (the refused TraceEvent).
    """

    # AutoGraph re-creates an error that crosses an outer tf.function being traced, keeping its
    # type only when __init__ is Exception's (anything else becomes a StagingError); the new
    # error is raised while handling the original, which stays reachable as __context__.
    __init__ = Exception.__init__

    function: str
    cause: str
    count: int
    max_traces: int
    event: TraceEvent | None

    @classmethod
    def create(cls, message: str, **fields: Any) -> BudgetExceededError:
        """The error with its fields set."""
        error: BudgetExceededError = cls(message)
        error.__dict__.update(fields)
        return error

    def __getattr__(self, name: str) -> Any:
        # Only reached for a field AutoGraph's copy lacks: read it from the original.
        if name in _FIELDS:
            context = self.__context__
            while context is not None:
                if name in vars(context):
                    return vars(context)[name]
                context = context.__context__
        raise AttributeError(name)


def function_key(fn: Any) -> Key:
    """The (file, first line, qualname) the monitor files traces of this function under."""
    # The adapter's own unwrapping, so that the key is the one the trace hook computes.
    from tfretrace._tf_adapter import _innermost_code

    target = getattr(fn, "python_function", fn)  # a tf.function object: its Python function
    code, qualname = _innermost_code(target)
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
    """

    def __init__(
        self,
        max_traces: int,
        *,
        warn_only: bool = False,
        keys: Iterable[Key] = (),
        names: Iterable[str] = (),
        origin: str = "tfretrace.budget",
    ) -> None:
        if isinstance(max_traces, bool) or not isinstance(max_traces, int) or max_traces < 0:
            raise ValueError(f"max_traces must be a non-negative int, got {max_traces!r}")
        self.max_traces = max_traces
        self.warn_only = warn_only
        self.keys = frozenset(keys)
        self.names = tuple(names)
        self.origin = origin
        self.armed = True
        self.counts: dict[Key, int] = {}
        self.violations: list[BudgetExceededError] = []
        self._lock = threading.Lock()
        # Bound methods are new objects at every access: keep one of each to remove them later.
        self._before = self._check
        self._after = self._record

    def matches(self, state: FunctionState) -> bool:
        """Whether traces of this function count against the budget."""
        if not self.keys and not self.names:
            return True
        if state.key in self.keys:
            return True
        return any(state.name == n or state.name.endswith("." + n) for n in self.names)

    def attach(self, monitor: Monitor) -> None:
        """Enforce on the traces this monitor receives."""
        monitor.add_listener(self._before, before_trace=True)
        monitor.add_listener(self._after)

    def detach(self, monitor: Monitor) -> None:
        """Stop enforcing on this monitor."""
        monitor.remove_listener(self._before)
        monitor.remove_listener(self._after)

    def reset(self) -> None:
        """Forget the counts and the violations."""
        with self._lock:
            self.counts.clear()
            self.violations.clear()

    def total(self) -> int:
        """Counted traces over all functions."""
        return sum(self.counts.values())

    def _check(self, state: FunctionState, event: TraceEvent) -> None:
        if not self.armed or event.cause in UNCOUNTED or not self.matches(state):
            return
        with self._lock:
            count = self.counts.get(state.key, 0)
        if count < self.max_traces:
            return
        error = BudgetExceededError.create(
            self.message(state, event, count + 1),
            function=state.name,
            cause=event.cause,
            count=count + 1,
            max_traces=self.max_traces,
            event=event,
        )
        self.violations.append(error)
        if not self.warn_only:
            raise error
        warning = RetracingWarning(WARN_PREFIX + str(error)[len(PREFIX):])
        warning.cause = event.cause  # type: ignore[attr-defined]
        filename, _, line = (event.call_site or "<unknown>:0").rpartition(":")
        lineno = int(line) if line.isdigit() else 0
        warnings.warn_explicit(warning, RetracingWarning, filename or "<unknown>", lineno, module="tfretrace")

    def _record(self, state: FunctionState, event: TraceEvent) -> None:
        if not self.armed or event.cause in UNCOUNTED or not self.matches(state):
            return
        with self._lock:
            self.counts[state.key] = self.counts.get(state.key, 0) + 1

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
        lines.append(
            "  counted: every trace of this code by any tf.function object, except the expected"
            " variable-creation trace; TensorFlow did not trace, so its cache is unchanged"
        )
        return "\n".join(lines)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"a {n}{suffix}"


class _Hub:
    """The one monitor that enforces every decorator and block budget of the process."""

    def __init__(self) -> None:
        self.monitor: Monitor | None = None
        self.persistent: dict[Key, Limit] = {}
        self.blocks: list[Limit] = []
        self._lock = threading.RLock()

    def started(self) -> Monitor:
        with self._lock:
            if self.monitor is None:
                # Quiet: the budget raises or warns itself; the process monitor, if any, announces.
                self.monitor = Monitor(warn=False, log=False).start()
                for limit in [*self.persistent.values(), *self.blocks]:
                    limit.attach(self.monitor)
            return self.monitor

    def persistent_limit(self, key: Key, max_traces: int, warn_only: bool) -> Limit:
        with self._lock:
            limit = self.persistent.get(key)
            origin = f"@tfretrace.budget(max_traces={max_traces})"
            if limit is None:
                limit = Limit(max_traces, warn_only=warn_only, keys=[key], origin=origin)
                self.persistent[key] = limit
                if self.monitor is not None:
                    limit.attach(self.monitor)
            else:
                # Re-decorating the same code (a tf.function built in a loop or a factory) keeps
                # the count: that is how new-function-object retracing is caught.
                limit.max_traces, limit.warn_only, limit.origin = max_traces, warn_only, origin
            return limit

    def enter(self, limit: Limit) -> None:
        with self._lock:
            self.blocks.append(limit)
            limit.attach(self.started())

    def leave(self, limit: Limit) -> None:
        with self._lock:
            if limit in self.blocks:
                self.blocks.remove(limit)
            if self.monitor is not None:
                limit.detach(self.monitor)

    def reset(self) -> None:
        with self._lock:
            for limit in self.persistent.values():
                limit.reset()
            if self.monitor is None:
                return
            # A fresh monitor also forgets the history the explanations compare against.
            self.monitor.stop()
            self.monitor = None
            if self.persistent or self.blocks:
                self.started()


_hub = _Hub()


def reset() -> None:
    """Zero the counts of decorator budgets and forget trace history (the pytest plugin does this per test)."""
    _hub.reset()


class Budget:
    """A trace budget: ``@budget(max_traces=N)`` decorator, or ``with budget(fn, max_traces=N):`` block."""

    def __init__(self, target: Any, max_traces: int, warn_only: bool) -> None:
        self.target = target
        self.max_traces = max_traces
        self.warn_only = warn_only
        self.key = None if target is None else function_key(target)
        # Validates max_traces now, at the user's line, rather than at the first trace.
        self._limit = self._block_limit()

    def _block_limit(self) -> Limit:
        what = "" if self.target is None else f"{getattr(self.target, '__name__', 'fn')}, "
        return Limit(
            self.max_traces,
            warn_only=self.warn_only,
            keys=[] if self.key is None else [self.key],
            origin=f"with tfretrace.budget({what}max_traces={self.max_traces})",
        )

    def __call__(self, fn: F) -> F:
        """Decorate a function or a tf.function (either order) with a process-long budget."""
        if self.target is not None:
            raise TypeError(
                "tfretrace.budget(fn) is a context manager over a block; to decorate, write "
                "@tfretrace.budget(max_traces=N) above or below @tf.function"
            )
        if not callable(fn):
            raise TypeError(f"tfretrace.budget(...) decorates a function, got {type(fn).__name__}")
        key = function_key(fn)
        limit = _hub.persistent_limit(key, self.max_traces, self.warn_only)
        if "tensorflow" in sys.modules:
            # Above or below @tf.function TensorFlow is already imported: enforce from now on and
            # hand back the very object, so tf.function methods and attributes stay intact.
            _hub.started()
            return fn
        return _lazy(fn, key, limit)

    def __enter__(self) -> Budget:
        self._limit.reset()
        _hub.enter(self._limit)
        return self

    def __exit__(self, *exc: object) -> None:
        _hub.leave(self._limit)

    @property
    def count(self) -> int:
        """Traces counted inside the block so far (all matching functions)."""
        return self._limit.total()

    @property
    def violations(self) -> list[BudgetExceededError]:
        """The budget breaches inside the block (several only in warn-only mode)."""
        return list(self._limit.violations)


def _lazy(fn: F, key: Key, limit: Limit) -> F:
    """A wrapper that starts enforcing on first call, so decorating does not import TensorFlow."""

    @functools.wraps(fn)
    def budgeted(*args: Any, **kwargs: Any) -> Any:
        if _hub.monitor is None:
            _hub.started()
            tf = sys.modules.get("tensorflow")
            if tf is not None and tf.inside_function():
                # tf.function(budgeted) is tracing right now and the hook missed it: count it.
                limit.counts[key] = limit.counts.get(key, 0) + 1
        return fn(*args, **kwargs)

    return budgeted  # type: ignore[return-value]


def budget(fn: Any = None, *, max_traces: int = 1, warn_only: bool = False) -> Budget:
    """A trace budget: allow ``max_traces`` traces per function code, then raise RetraceError.

    ``@budget(max_traces=1)`` above or below ``@tf.function`` budgets that function for the
    process; ``with budget(step, max_traces=0):`` counts only the traces of ``step`` inside the
    block, and ``with budget(max_traces=1):`` those of every function. ``warn_only`` emits a
    RetracingWarning instead of raising. The expected variable-creation trace is not counted.
    """
    return Budget(fn, max_traces, warn_only)


_strict: weakref.WeakKeyDictionary[Monitor, Limit] = weakref.WeakKeyDictionary()


def strict_from_env(monitor: Monitor, environ: Mapping[str, str] | None = None) -> None:
    """Enforce ``TFRETRACE_STRICT=N`` traces per function on this monitor (idempotent).

    ``TFRETRACE_STRICT_WARN=1`` warns instead of raising. Does nothing when the variable is unset.
    """
    env = os.environ if environ is None else environ
    text = env.get(STRICT_ENV, "").strip()
    if not text:
        return
    if not text.isdigit():
        raise ValueError(f"{STRICT_ENV} must be a non-negative integer (max traces per function), got {text!r}")
    if monitor in _strict:
        return
    warn_only = env.get(STRICT_WARN_ENV, "").strip().lower() not in ("", "0", "false", "no")
    limit = Limit(int(text), warn_only=warn_only, origin=f"{STRICT_ENV}={int(text)}")
    limit.attach(monitor)
    _strict[monitor] = limit


def install(*, warn: bool = True, log: bool = True, max_events: int = _monitor.DEFAULT_MAX_EVENTS) -> Monitor:
    """:func:`tfretrace.monitor.install`, honouring ``TFRETRACE_STRICT`` (this is ``tfretrace.install``)."""
    monitor = _monitor.install(warn=warn, log=log, max_events=max_events)
    strict_from_env(monitor)
    return monitor
