"""tfretrace: find, explain, fix and prevent tf.function retracing. The public API is listed here."""

from __future__ import annotations

from typing import Any

from tfretrace._util.version import __version__

# budget.install wraps monitor.install so that tfretrace.install() honours TFRETRACE_STRICT.
from tfretrace.budget import budget, install
from tfretrace.records import display as _display
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


def _session_html(session: Session) -> str:
    from tfretrace.render.notebook import report_frame  # loaded when a notebook shows a session

    return report_frame(session)


def _function_html(report: Any) -> str:
    from tfretrace.render.notebook import function_session, report_frame

    return report_frame(function_session(report))


def _session_summary(session: Session) -> str:
    from tfretrace.render._model import summary_line

    return summary_line(session)


# The records' IPython display hooks draw through the renderers, plugged in here at the top so
# that no record imports a renderer (imports flow one way) and a renderer loads only when shown.
_display.use(session_html=_session_html, function_html=_function_html, session_summary=_session_summary)


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
