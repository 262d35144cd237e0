"""tfretrace: find, explain, fix and prevent tf.function retracing. The public API is listed here."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from tfretrace._util.version import __version__
from tfretrace.records import display as _display

if TYPE_CHECKING:
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

# The public names load on first use (PEP 562): `tfretrace --help`, `tfretrace report` and the
# linter do not pay for the monitor, the budgets and the fix planner they never call.
_PUBLIC = {
    "install": "tfretrace.budget",
    "RetraceError": "tfretrace.records.errors",
    "RetracingWarning": "tfretrace.records.errors",
    "TensorFlowMissingError": "tfretrace.records.errors",
    "UnsupportedVersionError": "tfretrace.records.errors",
    "UntestedVersionWarning": "tfretrace.records.errors",
    "Session": "tfretrace.records.session",
    "SessionFormatError": "tfretrace.records.session",
    "load": "tfretrace.records.session",
    "merge": "tfretrace.records.session",
    "Monitor": "tfretrace.runtime.monitor",
    "current": "tfretrace.runtime.monitor",
    "stop": "tfretrace.runtime.monitor",
    "watch": "tfretrace.runtime.monitor",
    "prevent": "tfretrace.runtime.prevent",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'tfretrace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC, "budget"})


class _Package(types.ModuleType):
    """The package's module type: ``tfretrace.budget`` is the decorator, loaded on first use.

    Importing the subpackage ``tfretrace.budget`` makes Python set the package's attribute of
    that name to the subpackage; this property keeps the name meaning the decorator.
    """

    @property
    def budget(self) -> Any:
        from tfretrace.budget import budget

        return budget

    @budget.setter
    def budget(self, value: Any) -> None:
        pass  # the subpackage itself stays in sys.modules["tfretrace.budget"]


sys.modules[__name__].__class__ = _Package


def _session_html(session: Any) -> str:
    from tfretrace.render.notebook import report_frame  # loaded when a notebook shows a session

    return report_frame(session)


def _function_html(report: Any) -> str:
    from tfretrace.render.notebook import function_session, report_frame

    return report_frame(function_session(report))


def _session_summary(session: Any) -> str:
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
