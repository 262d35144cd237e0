"""Apply a plan's span replacements to source text in tests: the same libcst rewriter as tfretrace fix."""

from __future__ import annotations

from collections.abc import Iterable

from tfretrace.fix.applying.rewrite import apply_replacements
from tfretrace.fix.core.source import Replacement


def apply_edits(text: str, edits: Iterable[Replacement]) -> str:
    """The text after ``edits``; a RewriteError where tfretrace fix would refuse them too."""
    return apply_replacements(text, list(edits))
