"""Matching functions across runs by their keys: exact, moved (same code) or edited (same place)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tfretrace.records.function_key import (
    EDITED,
    EXACT,
    HOISTED,
    MOVED,
    FunctionKey,
    keras_key,
    module_of_path,
    path_of_site,
)

if TYPE_CHECKING:
    from tfretrace.records.events import KerasInfo
    from tfretrace.records.function_report import FunctionReport


# Keras methods as recorded (KerasInfo.method) -> the role the monitor keys rows by: the same
# table as tfretrace._tf.keras.KERAS_ROLES, which this data-layer module cannot import.
_ROLES = {"fit": "train", "train_on_batch": "train", "evaluate": "test", "test_on_batch": "test",
          "predict": "predict", "predict_on_batch": "predict"}


def _keras_record_key(keras: KerasInfo) -> FunctionKey:
    role = _ROLES.get(keras.method, keras.method)
    return keras_key(keras.built_at, keras.model_class, role)


def record_key(report: FunctionReport) -> FunctionKey:
    """The key of a session's function record: the recorded one, else one made from name and location.

    Sessions written before keys were recorded fall back to the module of the record's location
    and its name (no code hash); Keras rows to their model's build site, class and role.
    """
    if report.key is not None:
        return report.key
    if report.keras is not None:
        return _keras_record_key(report.keras)
    return FunctionKey(module_of_path(path_of_site(report.location)), report.name, None)


def moved_name(report: FunctionReport) -> str | None:
    """The module-level name the report's fix plan moves its nested def to, or None.

    Read from the plan's edits (a def inserted as whole lines), never from its sentences: the
    inserted text's module-level def of the nested function's own name.
    """
    qualname = report.key.qualname if report.key is not None else report.name
    if "<locals>" not in qualname:
        return None
    own = qualname.rpartition(".")[2]
    for step in report.plan:
        for edit in step.get("edits") or ():
            text = edit.get("text") if isinstance(edit, dict) else None
            if not isinstance(text, str) or not text.endswith("\n") or own not in text:
                continue
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == own for s in tree.body):
                return own
    return None


__all__ = ["Matching", "Pair", "match", "moved_name", "record_key"]

T = TypeVar("T")


@dataclass(frozen=True)
class Pair(Generic[T]):
    """One function of the base run and the same function of the head run, and how they matched."""

    base: T
    head: T
    how: str  # EXACT, MOVED or EDITED


@dataclass(frozen=True)
class Matching(Generic[T]):
    """Functions of two runs paired; those only in the head run are new, only in the base vanished."""

    pairs: tuple[Pair[T], ...]
    new: tuple[T, ...]
    vanished: tuple[T, ...]


def _default_key(item: Any) -> FunctionKey:
    return item if isinstance(item, FunctionKey) else record_key(item)


# What one side of a pairing round matches on: an item and its key -> an identity, or None (not in this round).
_Ident = Callable[[Any, FunctionKey], "tuple[Any, ...] | None"]


def _hoisted_tiers(moved_to: Callable[[Any], str | None]) -> list[tuple[str, _Ident, _Ident]]:
    """Base nested def -> head module-level def: by the base plan's move, then by the same code."""

    def top(k: FunctionKey) -> bool:
        return "<locals>" not in k.qualname and "." not in k.qualname

    def planned(item: Any, k: FunctionKey) -> tuple[Any, ...] | None:
        name = moved_to(item)
        return None if name is None else (k.module, name)

    def same_code(item: Any, k: FunctionKey) -> tuple[Any, ...] | None:
        if "<locals>" not in k.qualname or k.code_hash is None:
            return None
        return (k.module, k.qualname.rpartition(".")[2], k.code_hash)

    return [
        (HOISTED, planned, lambda _i, k: (k.module, k.qualname) if top(k) else None),
        (HOISTED, same_code, lambda _i, k: (k.module, k.qualname, k.code_hash) if top(k) and k.code_hash else None),
    ]


def match(
    base: Iterable[T], head: Iterable[T], key: Callable[[T], FunctionKey] | None = None,
    moved_to: Callable[[T], str | None] | None = None,
) -> Matching[T]:
    """Pair the functions of two runs: exact key, then same name and code (moved), then same place and name (edited).

    ``base`` and ``head`` hold FunctionKeys, session function records, or anything ``key`` maps
    to a FunctionKey. Each item is paired at most once; among several candidates the first in
    order wins, so duplicates (one function in several workers) pair up in order. ``moved_to``
    (a base item's module-level name after its fix, or None) adds, before ``edited``, the nested
    defs a fix moved to module level (HOISTED): by that name, else by their own code and name.
    """
    key_of = key or _default_key
    left = [(item, key_of(item)) for item in base]
    right = [(item, key_of(item)) for item in head]
    taken_left: set[int] = set()
    taken_right: set[int] = set()
    pairs: list[tuple[int, Pair[T]]] = []

    def same(tier: Callable[[FunctionKey], tuple[Any, ...] | None]) -> tuple[_Ident, _Ident]:
        return (lambda _item, k: tier(k)), (lambda _item, k: tier(k))

    tiers: list[tuple[str, _Ident, _Ident]] = [
        (EXACT, *same(lambda k: (k.module, k.qualname, k.code_hash))),
        (MOVED, *same(lambda k: None if k.code_hash is None else (k.qualname, k.code_hash))),
        *(_hoisted_tiers(moved_to) if moved_to is not None else []),
        (EDITED, *same(lambda k: (k.module, k.qualname))),
    ]
    for how, left_ident, right_ident in tiers:
        waiting: dict[tuple[Any, ...], list[int]] = {}
        for index, (item, k) in enumerate(left):
            ident = left_ident(item, k)
            if index not in taken_left and ident is not None:
                waiting.setdefault(ident, []).append(index)
        for index, (item, k) in enumerate(right):
            ident = right_ident(item, k)
            if index in taken_right or ident is None or not waiting.get(ident):
                continue
            partner = waiting[ident].pop(0)
            taken_left.add(partner)
            taken_right.add(index)
            pairs.append((index, Pair(left[partner][0], item, how)))
    pairs.sort(key=lambda entry: entry[0])  # in the head run's order, whatever tier matched
    return Matching(
        pairs=tuple(pair for _, pair in pairs),
        new=tuple(item for index, (item, _) in enumerate(right) if index not in taken_right),
        vanished=tuple(item for index, (item, _) in enumerate(left) if index not in taken_left),
    )
