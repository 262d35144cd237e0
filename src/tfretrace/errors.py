"""The exception and warning types tfretrace raises or emits."""

from __future__ import annotations


class RetracingWarning(UserWarning):
    """Emitted once per retrace with the explanation; filter it like any warning category."""


class RetraceError(AssertionError):
    """A trace budget was exceeded; the message carries the explanation and the fix."""

    # AutoGraph re-raises an error from a nested trace with its own type only when the error's
    # __init__ is Exception's; AssertionError's is not, so borrow Exception's.
    __init__ = Exception.__init__


class UnsupportedVersionError(RuntimeError):
    """The installed TensorFlow/Keras is not a version tfretrace was tested with."""


class TensorFlowMissingError(RuntimeError):
    """The runtime monitor needs TensorFlow, which is not installed."""
