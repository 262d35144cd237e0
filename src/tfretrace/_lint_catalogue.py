"""Catalogue entries of the static linter's rules (data only; the checks live in tfretrace.lint)."""

from __future__ import annotations

from tfretrace._cause import Cause

LINT_RULES: tuple[Cause, ...] = ()
