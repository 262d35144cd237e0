"""The exception and warning types tfretrace raises or emits."""

from __future__ import annotations


class RetracingWarning(UserWarning):
    """Emitted once per retrace with the explanation; filter it like any warning category."""


class RetraceError(AssertionError):
    """A trace budget was exceeded; the message carries the explanation and the fix."""


class UnsupportedVersionError(RuntimeError):
    """The installed TensorFlow/Keras is not a version tfretrace was tested with."""


class TensorFlowMissingError(RuntimeError):
    """The runtime monitor needs TensorFlow, which is not installed."""
