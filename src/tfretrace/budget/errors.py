"""The error a breached budget raises, and the words its messages start with."""

from __future__ import annotations

from typing import Any

from tfretrace.records.errors import RetraceError
from tfretrace.records.events import TraceEvent

# Python prints the exception's or warning's class name before the message: no name here.
PREFIX = "budget exceeded:"
WARN_PREFIX = "budget exceeded (warn only):"

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


# Users meet (and catch) the error as tfretrace.budget.BudgetExceededError, which is how
# tracebacks and pickles should name it; the pytest plugin recognises it by that module too.
BudgetExceededError.__module__ = "tfretrace.budget"
