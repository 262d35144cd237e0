"""tfretrace: find, explain, fix and prevent tf.function retracing. The public API is listed here."""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0.dev0"

# budget.install wraps monitor.install so that tfretrace.install() honours TFRETRACE_STRICT.
from tfretrace.budget import budget, install
from tfretrace.records.errors import (
    RetraceError,
    RetracingWarning,
    TensorFlowMissingError,
    UnsupportedVersionError,
    UntestedVersionWarning,
)
from tfretrace.records.session import Session, SessionFormatError, load, merge
from tfretrace.runtime.monitor import Monitor, current, stop, watch
from tfretrace.runtime.prevent import prevent


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tfretrace``: every cell is watched and a cell that retraced gets a compact report."""
    from tfretrace.integrations.ipython import load as load_extension

    load_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext tfretrace``: stop watching cells."""
    from tfretrace.integrations.ipython import unload

    unload(ipython)

__all__ = [
    "Monitor",
    "RetraceError",
    "RetracingWarning",
    "Session",
    "SessionFormatError",
    "TensorFlowMissingError",
    "UnsupportedVersionError",
    "UntestedVersionWarning",
    "__version__",
    "budget",
    "current",
    "install",
    "load",
    "merge",
    "prevent",
    "stop",
    "watch",
]
