"""XLA compile budgets (``max_xla_compiles``): counted as TensorFlow logs each compile, enforced at the next check.

A compile is read from TensorFlow's log on a thread, after it happened, so it cannot be refused
the way a trace is. The breach is kept and raised (or warned) at the budget's next check: the end
of a ``with budget(...)`` block, the next call of a decorated function, the end of a test, a Keras
epoch; every check first waits for the compiles already logged.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from tfretrace._util.text import printable
from tfretrace.budget.errors import PREFIX, WARN_PREFIX, BudgetExceededError
from tfretrace.records.errors import RetracingWarning


class XlaLimit:
    """The XLA half of a budget: compiles per function code, and the breaches not yet raised."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner
        self._lock = threading.Lock()
        self.counts: dict[tuple[str, int, str], int] = {}
        self._pending: list[Any] = []

    def reset(self) -> None:
        """Forget counts and unraised breaches."""
        with self._lock:
            self.counts.clear()
            self._pending.clear()

    def on_compile(self, state: Any, event: Any) -> None:
        """Count one compile (log reader thread); keep a breach for the next check."""
        owner = self._owner
        limit = owner.max_xla_compiles
        # The thread filter of a block budget is about who traces; compiles arrive on the
        # reader's thread, so only the function filter applies.
        if limit is None or not owner.armed or not owner.covers(state):
            return
        with self._lock:
            count = self.counts.get(state.key, 0) + 1
            self.counts[state.key] = count
        if count <= limit:
            return
        error = BudgetExceededError.create(
            self.message(state, event, count),
            function=state.name,
            cause=event.cause,
            count=count,
            max_traces=owner.max_traces,
            event=None,
        )
        error.xla_event = event
        owner.count_violation(error)
        with self._lock:
            self._pending.append(error)

    def message(self, state: Any, event: Any, count: int) -> str:
        """The error text: which budget, which compile, what changed against the closest one."""
        lines = [
            f"{PREFIX} {state.name} ({state.location}) was XLA-compiled "
            f"{count} times, cause {event.cause}; budget {self._owner.origin} allows "
            f"{self._owner.max_xla_compiles} XLA compiles",
            f"  {event.line()}",
            "  XLA compiles a trace again for every new concrete input shape: pad or bucket the "
            "varying dimensions, or jit_compile=False where compiles outnumber calls",
        ]
        return printable("\n".join(lines))

    def check(self, sync: Any = None) -> None:
        """Raise the first breach not raised yet (warn instead for a warn-only budget)."""
        if sync is not None:
            sync()
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        if not self._owner.warn_only:
            raise pending[0]
        for error in pending:
            warning = RetracingWarning.create(
                WARN_PREFIX + str(error)[len(PREFIX):], function=error.function, cause=error.cause, event=error.event
            )
            warnings.warn(warning, stacklevel=3)

