"""Budgets on a block (``with tfretrace.budget(...)``) and on a function (``@tfretrace.budget``), and their reset."""

from __future__ import annotations

import functools
import linecache
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tfretrace.budget.errors import BudgetExceededError
from tfretrace.budget.limit import Key, Limit, function_key
from tfretrace.runtime import monitor as _monitor
from tfretrace.runtime.monitor import Monitor

F = TypeVar("F", bound=Callable[..., Any])


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
                # It reports nothing per retrace, so TensorFlow's own warning is not redundant while
                # only budgets watch: it keeps it (a stray hub must not hide it for the process).
                self.monitor = Monitor(warn=False, log=False, keep_tf_warning=True).start()
                for limit in [*self.persistent.values(), *self.blocks]:
                    limit.attach(self.monitor)
            return self.monitor

    def persistent_limit(self, key: Key, max_traces: int | None, warn_only: bool,
                         max_xla_compiles: int | None = None) -> Limit:
        with self._lock:
            limit = self.persistent.get(key)
            origin = f"@tfretrace.budget({_budget_args(max_traces, max_xla_compiles)})"
            if limit is None:
                limit = Limit(max_traces, warn_only=warn_only, keys=[key], origin=origin,
                              max_xla_compiles=max_xla_compiles)
                self.persistent[key] = limit
                if self.monitor is not None:
                    limit.attach(self.monitor)
            else:
                # Re-decorating the same code (a tf.function built in a loop or a factory) keeps
                # the count: that is how new-function-object retracing is caught.
                limit.max_traces, limit.warn_only, limit.origin = max_traces, warn_only, origin
                limit.max_xla_compiles = max_xla_compiles
            return limit

    def enter(self, limit: Limit) -> None:
        with self._lock:
            # Start first: starting attaches every known block, and this one must be attached once.
            monitor = self.started()
            self.blocks.append(limit)
            limit.attach(monitor)

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

    def __init__(self, target: Any, max_traces: int | None, warn_only: bool,
                 max_xla_compiles: int | None = None) -> None:
        self.target = target
        self.max_traces = max_traces
        self.max_xla_compiles = max_xla_compiles
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
            origin=f"with tfretrace.budget({what}{_budget_args(self.max_traces, self.max_xla_compiles)})",
            max_xla_compiles=self.max_xla_compiles,
            # A block bounds every trace its functions have: a warm-up before it counts.
            existing=True,
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
        if self.max_xla_compiles is not None:
            _refuse_blind_compile_budget(self.max_xla_compiles)
        limit = _hub.persistent_limit(key, self.max_traces, self.warn_only, self.max_xla_compiles)
        if self.max_xla_compiles is not None:
            # Compiles are read from TensorFlow's log after the call: each call raises the
            # breaches read so far, which is the call after the compile at the latest.
            _hub.started()
            return _xla_checked(fn, limit)
        if "tensorflow" in sys.modules:
            # Above or below @tf.function TensorFlow is already imported: enforce from now on and
            # hand back the very object, so tf.function methods and attributes stay intact.
            _hub.started()
            return fn
        return _lazy(fn, key, limit)

    def __enter__(self) -> Budget:
        if self.max_xla_compiles is not None:
            _refuse_blind_compile_budget(self.max_xla_compiles)
        self._limit.reset()
        self._limit.thread = threading.get_ident()
        _hub.enter(self._limit)
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None and self.max_xla_compiles is not None and _hub.monitor is not None:
                self._limit.xla.check(sync=_hub.monitor.sync_xla)
        finally:
            _hub.leave(self._limit)

    @property
    def count(self) -> int:
        """Traces counted against the block's budget so far (all matching functions).

        The traces each function already had when the block met it are included (see the docs).
        """
        return self._limit.total()

    @property
    def violations(self) -> list[BudgetExceededError]:
        """The first budget breaches inside the block (several only in warn-only mode).

        At most KEPT_VIOLATIONS are kept; :attr:`violation_count` counts them all.
        """
        return list(self._limit.violations)

    @property
    def violation_count(self) -> int:
        """Every budget breach inside the block, however many were kept."""
        return self._limit.violation_count


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


def budget(fn: Any = None, *, max_traces: int | None = 1, warn_only: bool = False,
           max_xla_compiles: int | None = None) -> Budget:
    """A trace budget: allow ``max_traces`` traces per function code, then raise RetraceError.

    ``@budget(max_traces=1)`` above or below ``@tf.function`` budgets that function for the
    process; ``with budget(step, max_traces=0):`` counts only the traces of ``step`` inside the
    block, and ``with budget(max_traces=1):`` those of every function. ``warn_only`` emits a
    RetracingWarning instead of raising. The expected variable-creation trace is not counted.
    ``max_xla_compiles`` also limits XLA compiles per function code (``max_traces=None`` for
    that alone); a compile is known once TensorFlow has logged it, so the breach is raised at
    the end of the block, or at the decorated function's next call.
    """
    if fn is not None and _on_a_decorator_line(sys._getframe(1)):
        # A bare @tfretrace.budget would turn the function into a context manager and fail at
        # its first call, far from the mistake: say so at the decorator's line instead.
        raise TypeError(
            "a bare @tfretrace.budget budgets nothing: write @tfretrace.budget(max_traces=N) above or "
            "below @tf.function (tfretrace.budget(fn) is a context manager: with tfretrace.budget(fn): ...)"
        )
    return Budget(fn, max_traces, warn_only, max_xla_compiles)


def _on_a_decorator_line(frame: Any) -> bool:
    """Whether the caller runs a decorator line (``@...``); False when its source is unknown."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return line.lstrip().startswith("@")


def _refuse_blind_compile_budget(max_xla_compiles: int) -> None:
    """A compile budget that cannot see compiles would always pass: say why, in one line, now."""
    why = _monitor.xla_unavailable()
    if why is not None:
        raise RuntimeError(f"tfretrace.budget(max_xla_compiles={max_xla_compiles}) cannot count: {why}")


def _budget_args(max_traces: int | None, max_xla_compiles: int | None) -> str:
    parts = [] if max_traces is None else [f"max_traces={max_traces}"]
    if max_xla_compiles is not None:
        parts.append(f"max_xla_compiles={max_xla_compiles}")
    return ", ".join(parts)


def _xla_checked(fn: F, limit: Limit) -> F:
    """``fn`` that raises the XLA breaches read so far after each call."""

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        limit.xla.check()
        return result

    return checked  # type: ignore[return-value]


