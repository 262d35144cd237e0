"""Typed reading of untrusted JSON values: each reader returns the value or raises FieldError."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from tfretrace._util.text import encodable

# Counts and indexes above this are not from a real run; they would overflow renderers' math.
MAX_COUNT = 2**53
# Seconds and timestamps beyond this are not from a real run either (about 3 million years).
MAX_SECONDS = 1e14

T = TypeVar("T")


class FieldError(ValueError):
    """One field of a loaded document has the wrong type or an impossible value."""


def mapping(value: Any, where: str) -> dict[str, Any]:
    """A JSON object."""
    if not isinstance(value, dict):
        raise FieldError(f"{where} must be an object, not {_kind(value)}")
    return value


def items(value: Any, where: str) -> list[Any]:
    """A JSON array."""
    if not isinstance(value, list):
        raise FieldError(f"{where} must be an array, not {_kind(value)}")
    return value


def text(value: Any, where: str) -> str:
    """A string; lone surrogates become U+FFFD so every renderer can encode it."""
    if not isinstance(value, str):
        raise FieldError(f"{where} must be a string, not {_kind(value)}")
    return encodable(value)


def optional_text(value: Any, where: str) -> str | None:
    """A string or null."""
    return None if value is None else text(value, where)


def count(value: Any, where: str, low: int = 0) -> int:
    """A whole number from ``low`` up to MAX_COUNT (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"{where} must be a whole number, not {_kind(value)}")
    if not low <= value <= MAX_COUNT:
        raise FieldError(f"{where} is out of range ({_short(value)})")
    return value


def optional_count(value: Any, where: str, low: int = 0) -> int | None:
    """A whole number or null."""
    return None if value is None else count(value, where, low)


def seconds(value: Any, where: str, low: float = 0.0) -> float:
    """A finite number from ``low`` up to MAX_SECONDS."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(f"{where} must be a number, not {_kind(value)}")
    if isinstance(value, int) and abs(value) > MAX_SECONDS:
        raise FieldError(f"{where} is out of range ({_short(value)})")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= MAX_SECONDS:
        raise FieldError(f"{where} is out of range ({_short(value)})")
    return number


def flag(value: Any, where: str) -> bool:
    """A JSON boolean."""
    if not isinstance(value, bool):
        raise FieldError(f"{where} must be true or false, not {_kind(value)}")
    return value


def text_map(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """An object of strings, as sorted pairs (null is empty)."""
    if value is None:
        return ()
    data = mapping(value, where)
    return tuple(sorted((text(k, where), text(v, f"{where}[{k!r}]")) for k, v in data.items()))


def each(value: Any, where: str, read: Callable[[Any, str], T]) -> tuple[T, ...]:
    """A JSON array read item by item: ``read(item, "where[i]")`` checks and converts each one."""
    return tuple(read(v, f"{where}[{i}]") for i, v in enumerate(items(value, where)))


def texts(value: Any, where: str) -> tuple[str, ...]:
    """An array of strings."""
    return each(value, where, text)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "?")


def _short(value: Any) -> str:
    if isinstance(value, int) and abs(value) > 10**12:
        return f"a {len(str(abs(value)))}-digit number"
    return repr(value)
