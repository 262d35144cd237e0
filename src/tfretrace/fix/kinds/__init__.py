"""The fix kinds, one module per edit kind, and their registry: the safety and anchor tables derive from it."""
