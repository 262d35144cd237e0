"""The static linter: finds tf.function retracing bugs and trace-time traps without TensorFlow."""

from __future__ import annotations

from tfretrace.lint.checker import ALL_CODES, lint_source
from tfretrace.lint.findings import Finding, Report, Skipped
from tfretrace.lint.runner import lint_paths

__all__ = ["ALL_CODES", "Finding", "Report", "Skipped", "lint_paths", "lint_source"]
