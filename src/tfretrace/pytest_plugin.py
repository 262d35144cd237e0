"""pytest plugin wiring for trace budgets (registered through the ``pytest11`` entry point)."""
