"""Explanation: why a trace happened (the analyzer) and the one line that says it."""
