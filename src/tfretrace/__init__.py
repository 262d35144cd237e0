"""tfretrace: find, explain, fix and prevent tf.function retracing. The public API is listed here."""

from __future__ import annotations

from tfretrace.errors import (
    RetraceError,
    RetracingWarning,
    TensorFlowMissingError,
    UnsupportedVersionError,
)
from tfretrace.session import Session, SessionFormatError, load, merge

__version__ = "0.1.0"

__all__ = [
    "RetraceError",
    "RetracingWarning",
    "Session",
    "SessionFormatError",
    "TensorFlowMissingError",
    "UnsupportedVersionError",
    "__version__",
    "load",
    "merge",
]
