"""The exception and warning types tfretrace raises or emits."""

from __future__ import annotations

from typing import Any


class RetracingWarning(UserWarning):
    """Emitted once per retrace with the explanation; filter it like any warning category.

    ``cause`` (the cause slug), ``function`` (qualified name) and ``event`` (the TraceEvent) say
    which trace it is about; None on a warning made by hand.
    """

    cause: str | None = None
    function: str | None = None
    event: Any = None

    @classmethod
    def create(cls, message: str, *, function: str, cause: str, event: Any) -> RetracingWarning:
        """A warning carrying the trace it is about."""
        warning = cls(message)
        warning.function, warning.cause, warning.event = function, cause, event
        return warning


class RetraceError(AssertionError):
    """A trace budget was exceeded; the message carries the explanation and the fix."""

    # AutoGraph re-raises an error from a nested trace with its own type only when the error's
    # __init__ is Exception's; AssertionError's is not, so borrow Exception's.
    __init__ = Exception.__init__


class UnsupportedVersionError(RuntimeError):
    """The installed TensorFlow is older than tfretrace supports (2.15)."""


class UntestedVersionWarning(UserWarning):
    """Emitted once when TensorFlow or Keras is newer (or older) than the tested range; tfretrace runs on."""


class TensorFlowMissingError(RuntimeError):
    """The runtime monitor needs TensorFlow, which is not installed."""


# Users meet these as tfretrace.<Name> (the package exports them): tracebacks and pickles name that
# path, which stays put wherever the package's layout defines them.
for _public in (
    RetracingWarning, RetraceError, UnsupportedVersionError, UntestedVersionWarning, TensorFlowMissingError
):
    _public.__module__ = "tfretrace"
