"""The record type of one catalogue entry (kept apart so data modules can import it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    """One entry: a stable code (``TFR003``), a stable slug and the text that teaches it."""

    code: str
    slug: str
    title: str
    why: str
    fix: str
    bad: str
    good: str
    # "runtime" causes are what the monitor reports for a trace; "lint" entries are static rules,
    # each pointing at the runtime cause it would produce (or at a trace-time trap).
    kind: str = "runtime"
    cause: str | None = None
