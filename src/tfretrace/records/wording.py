"""Plain words for recorded values: Python floats without repr noise, tracing contexts without jargon."""

from __future__ import annotations

import re

# A float's repr: 0.05, -1e-05, 3.4999999999999996e-08 (never an int, a string or a tensor).
_FLOAT = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:e[-+]?\d+)?")
# Twelve significant digits: 0.034999999999999996 (0.05 * 0.7) reads as 0.035, while values that
# differ in the first 12 digits stay apart. The float32 shortest repr would merge far more of
# them, and the cache key compares the exact Python value, not a float32.
_DIGITS = 12

# What each field of TensorFlow's tracing context means, for a change of it.
_CONTEXT_WORDS = {
    "scope_type": "variable scope",
    "graph": "enclosing graph",
    "device": "device",
    "cross_replica": "cross-replica context",
    "xla": "XLA context",
    "variable_policy": "variable policy",
    "colocation": "colocation",
}


def float_text(value: str) -> str:
    """A float's repr at 12 significant digits (``0.035``, ``float 0.035``); anything else unchanged."""
    word, space, rest = value.partition(" ")
    if space and word == "float":  # a change of type names the new type first
        return f"float {float_text(rest)}"
    if not _FLOAT.fullmatch(value) or not any(c in value for c in ".e"):
        return value
    short = f"{float(value):.{_DIGITS}g}"
    if not any(c in short for c in ".e"):
        short += ".0"  # still reads as a float: 1.0, not 1
    return short


def value_pair(before: str, after: str) -> tuple[str, str]:
    """Both sides of a Python-value change, shortened only while they still read as different."""
    short = float_text(before), float_text(after)
    bare = [text.removeprefix("float ") for text in short]
    return short if bare[0] != bare[1] else (before, after)


def context_line(name: str, before: str, after: str) -> str:
    """A change of the tracing context in words (``<context>.scope_type`` is TensorFlow's field name)."""
    if name == "scope_type" and (before, after) == ("VARIABLE_CREATION", "NO_VARIABLE_CREATION"):
        return ("variables were created at the first trace: TensorFlow traced again to run without "
                "creating them (expected, once)")
    return f"{_CONTEXT_WORDS.get(name, name)} changed: {before} -> {after}"
