"""tfretrace: find, explain, fix and prevent tf.function retracing. The public API is listed here."""

from __future__ import annotations

__version__ = "0.1.0"

# budget.install wraps monitor.install so that tfretrace.install() honours TFRETRACE_STRICT.
from tfretrace.budget import budget, install
from tfretrace.errors import (
    RetraceError,
    RetracingWarning,
    TensorFlowMissingError,
    UnsupportedVersionError,
)
from tfretrace.monitor import Monitor, current, stop, watch
from tfretrace.session import Session, SessionFormatError, load, merge

__all__ = [
    "Monitor",
    "RetraceError",
    "RetracingWarning",
    "Session",
    "SessionFormatError",
    "TensorFlowMissingError",
    "UnsupportedVersionError",
    "__version__",
    "budget",
    "current",
    "install",
    "load",
    "merge",
    "stop",
    "watch",
]
