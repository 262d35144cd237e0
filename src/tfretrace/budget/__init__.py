"""Trace budgets: stop a run or a test the moment a tf.function traces more than it should."""

from __future__ import annotations

from tfretrace.budget.decorator import Budget, budget, reset
from tfretrace.budget.errors import PREFIX, WARN_PREFIX, BudgetExceededError
from tfretrace.budget.limit import KEPT_VIOLATIONS, UNCOUNTED, Limit, function_key
from tfretrace.budget.strict import STRICT_ENV, STRICT_WARN_ENV, install, strict_from_env

# The public face of the budget package: users and the pytest plugin have always imported these
# names from tfretrace.budget (docs/budgets.md); the modules behind it hold one concern each.
__all__ = [
    "KEPT_VIOLATIONS", "PREFIX", "STRICT_ENV", "STRICT_WARN_ENV", "UNCOUNTED", "WARN_PREFIX", "Budget",
    "BudgetExceededError", "Limit", "budget", "function_key", "install", "reset", "strict_from_env",
]
