"""Strict mode: ``TFRETRACE_STRICT=N`` bounds every function's traces, and tfretrace.install() honours it."""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping

from tfretrace.budget.limit import Limit
from tfretrace.runtime import monitor as _monitor
from tfretrace.runtime.monitor import Monitor

STRICT_ENV = "TFRETRACE_STRICT"


STRICT_WARN_ENV = "TFRETRACE_STRICT_WARN"


_strict: weakref.WeakKeyDictionary[Monitor, Limit] = weakref.WeakKeyDictionary()


def strict_from_env(monitor: Monitor, environ: Mapping[str, str] | None = None, origin: str | None = None) -> None:
    """Enforce ``TFRETRACE_STRICT=N`` traces per function on this monitor (idempotent).

    ``TFRETRACE_STRICT_WARN=1`` warns instead of raising. Does nothing when the variable is unset.
    ``origin`` names where N came from in a breach's message (default ``TFRETRACE_STRICT=N``).
    """
    env = os.environ if environ is None else environ
    text = env.get(STRICT_ENV, "").strip()
    if not text:
        return
    # str.isdigit() accepts '²' and other digits int() refuses: ASCII digits only.
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{STRICT_ENV} must be a non-negative integer (max traces per function), got {text!r}")
    if monitor in _strict:
        return
    warn_text = env.get(STRICT_WARN_ENV, "").strip().lower()
    if warn_text not in ("", "0", "false", "no", "off", "1", "true", "yes", "on"):
        raise ValueError(f"{STRICT_WARN_ENV} must be 1/true/yes/on or 0/false/no/off, got {warn_text!r}")
    warn_only = warn_text in ("1", "true", "yes", "on")
    # Strict mode bounds every trace a function has, those made before the monitor included.
    limit = Limit(int(text), warn_only=warn_only, origin=origin or f"{STRICT_ENV}={int(text)}",
                  existing=True)
    limit.attach(monitor)
    _strict[monitor] = limit


def install(
    *, warn: bool = True, log: bool = True, max_events: int = _monitor.DEFAULT_MAX_EVENTS,
    keep_tf_warning: bool = False,
) -> Monitor:
    """:func:`tfretrace.runtime.monitor.install`, honouring ``TFRETRACE_STRICT`` (this is ``tfretrace.install``)."""
    monitor = _monitor.install(warn=warn, log=log, max_events=max_events, keep_tf_warning=keep_tf_warning)
    strict_from_env(monitor)
    return monitor
