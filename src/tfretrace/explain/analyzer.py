"""Pure explanation logic: pick the closest earlier trace of the same code and name the cause."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tfretrace.explain.diff import cause_of, diff_context, diff_leaf, diff_signatures, is_under
from tfretrace.records.events import (
    CONTAINERS,
    SPEC,
    TENSOR,
    VARIABLE,
    Change,
    Leaf,
)


@dataclass(frozen=True)
class Prior:
    """An earlier trace as the analyzer sees it: what was traced, in which context, by which object."""

    index: int
    token: int
    signature: tuple[Leaf, ...]
    context: tuple[tuple[str, str], ...]
    refs: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    def as_seen_now(self) -> Prior:
        """This trace with objects that have died since marked dead: they never match again."""
        dead = {path for path, ref in self.refs if ref() is None}
        if not dead:
            return self
        leaves = tuple(
            replace(leaf, alive=False, ident=None) if leaf.path in dead else leaf for leaf in self.signature
        )
        return Prior(self.index, self.token, leaves, self.context)

    @property
    def fast(self) -> _Fast:
        """Flat tuples for the C-speed comparison in :func:`closest`, built once."""
        cached: _Fast | None = self.__dict__.get("_fast")
        if cached is None:
            cached = _Fast.of(self.signature)
            object.__setattr__(self, "_fast", cached)
        return cached

    @property
    def by_path(self) -> dict[str, Leaf]:
        """The signature keyed by path, built once (priors are compared many times)."""
        cached: dict[str, Leaf] | None = self.__dict__.get("_by_path")
        if cached is None:
            cached = {leaf.path: leaf for leaf in self.signature}
            object.__setattr__(self, "_by_path", cached)
        return cached


@dataclass(frozen=True)
class _Fast:
    paths: tuple[str, ...]
    items: tuple[tuple[object, ...], ...]
    containers: tuple[tuple[object, ...], ...]
    has_open: bool  # a None dimension or unknown rank: "covers" needs the slow comparison

    @classmethod
    def of(cls, signature: Sequence[Leaf]) -> _Fast:
        items = tuple(
            (leaf.kind, leaf.dtype, leaf.shape, leaf.value, leaf.type_name, leaf.ident, leaf.alive, leaf.extra)
            for leaf in signature
        )
        return cls(
            paths=tuple(leaf.path for leaf in signature),
            items=items,
            containers=tuple(item for item in items if item[0] in CONTAINERS),
            has_open=any(
                leaf.kind in (TENSOR, VARIABLE, SPEC)
                and (leaf.shape is None or None in leaf.shape)
                and leaf.kind != SPEC
                for leaf in signature
            ),
        )


@dataclass(frozen=True)
class Explanation:
    """The analyzer's verdict on one trace."""

    cause: str
    changes: tuple[Change, ...]
    closest: tuple[int, ...]


def closest(
    signature: Sequence[Leaf], context: Sequence[tuple[str, str]], priors: Sequence[Prior]
) -> tuple[list[Prior], list[Change], list[Change]]:
    """The earlier traces with the fewest differences (ties all returned, newest first).

    Distances are counted without building Change records, stopping as soon as a prior is worse
    than the best so far; only the winner is diffed in full. This keeps a retrace's explanation
    a small fraction of TensorFlow's own trace time even with many arguments and priors.
    """
    best: list[Prior] = []
    best_key: tuple[int, int] | None = None
    context = tuple(context)
    current = _Fast.of(signature)
    for prior in reversed(priors):
        context_cost = 0 if prior.context == context else len(diff_context(prior.context, context))
        limit = None if best_key is None else best_key[0] - context_cost
        fast = prior.fast
        leaf_cost: int | None
        if fast.paths == current.paths and not fast.has_open and fast.containers == current.containers:
            # Same structure, nothing generalized: every unequal leaf is exactly one difference.
            leaf_cost = sum(map(operator.ne, fast.items, current.items))
            if limit is not None and leaf_cost > limit:
                leaf_cost = None
        else:
            leaf_cost = distance(prior.by_path, signature, limit, len(prior.signature))
        if leaf_cost is None:
            continue
        key = (leaf_cost + context_cost, context_cost)
        if best_key is None or key < best_key:
            best, best_key = [prior], key
        elif key == best_key:
            best.append(prior)
    if not best:
        return [], [], []
    if len(best) > 1 and best_key is not None and best_key[0] <= NOVELTY_MAX_CHANGES:
        best = _prefer_novel(best, signature, priors)
    winner = best[0]
    return best, diff_signatures(winner.signature, signature), diff_context(winner.context, context)


# Ties are ranked by which difference is new only when the traces are this close: the question
# "which one change caused it" needs few changes, and ranking costs a diff per tied trace.
NOVELTY_MAX_CHANGES = 3


def _prefer_novel(tied: list[Prior], signature: Sequence[Leaf], priors: Sequence[Prior]) -> list[Prior]:
    """Order equally close traces so that the one whose differences are new comes first.

    f(float32 (2,)), f(int32 (2,)), f(float32 (3,)): the third is one change from either
    earlier trace, but float32 was traced before; (3,) never was. Its cause is the shape, so
    the first trace is the one to compare with. Among equals the newest stays first.
    """
    current = {leaf.path: leaf for leaf in signature}
    agreeing: dict[tuple[str, str], list[Prior]] = {}  # (path, change kind) -> priors that agree

    def seen_elsewhere(change: Change, candidate: Prior) -> bool:
        leaf = current.get(change.path)
        if leaf is None:
            return False
        key = (change.path, change.kind)
        found = agreeing.get(key)
        if found is None:
            found = [p for p in priors if _agrees(p.by_path.get(change.path), leaf, change.kind)]
            agreeing[key] = found
        return any(p is not candidate for p in found)

    def novel(candidate: Prior) -> tuple[int, int]:
        changes = diff_signatures(candidate.signature, signature)
        return sum(not seen_elsewhere(change, candidate) for change in changes), len(changes)

    newest, total = novel(tied[0])
    if newest == total:  # every difference from the newest is new: it stays first (the usual case)
        return tied
    scores = {id(tied[0]): newest}
    scores.update((id(p), novel(p)[0]) for p in tied[1:])
    ranked = sorted(enumerate(tied), key=lambda item: (-scores[id(item[1])], item[0]))
    return [prior for _, prior in ranked]


def _agrees(before: Leaf | None, after: Leaf, kind: str) -> bool:
    """Whether an earlier leaf already had what ``after`` has in the aspect a change of ``kind`` is about."""
    if before is None or before.kind != after.kind:
        return False
    if kind == "dtype":
        return before.dtype == after.dtype and before.type_name == after.type_name
    if kind == "spec":  # mostly a change of composite type (ragged -> sparse)
        return before.type_name == after.type_name
    if kind in ("shape", "rank"):
        b, a = before.shape, after.shape
        if b == a or b is None:
            return True
        if a is None or len(a) != len(b) or None not in b:
            return False
        return all(x is None or x == y for x, y in zip(b, a))
    if kind == "variable":
        return before.extra == after.extra
    if kind == "python-type":
        return before.type_name == after.type_name
    return diff_leaf(before, after) is None


def distance(
    before: dict[str, Leaf], after: Sequence[Leaf], limit: int | None, before_count: int
) -> int | None:
    """Weighted number of differing leaves (as in _weight), or None once it exceeds ``limit``."""
    cost = 0
    matched = 0
    broken: list[str] = []
    skip: str | None = None  # a changed container: its children are counted with it
    for leaf in after:
        path = leaf.path
        if skip is not None and is_under(path, skip):
            matched += path in before
            continue
        skip = None
        prev = before.get(path)
        if prev is None:
            cost += 1
        else:
            matched += 1
            if prev is leaf or prev == leaf or not _differs(prev, leaf):
                continue
            if leaf.kind in CONTAINERS or prev.kind != leaf.kind:
                cost += 1 + max(_descendants(path, after), _descendants(path, before.values()))
                skip = path
                broken.append(path)
            else:
                cost += 1
        if limit is not None and cost > limit:
            return None
    if matched < before_count:
        present = {leaf.path for leaf in after}
        cost += sum(
            1
            for path in before
            if path not in present and not any(is_under(path, b) for b in broken)
        )
    if limit is not None and cost > limit:
        return None
    return cost


def _differs(before: Leaf, after: Leaf) -> bool:
    if before.kind == after.kind == TENSOR:
        if before.dtype != after.dtype:
            return True
        b, a = before.shape, after.shape
        if b is None:
            return False
        if a is None or len(a) != len(b):
            return True
        return any(x is not None and x != y for x, y in zip(b, a))
    return diff_leaf(before, after) is not None


def _descendants(prefix: str, leaves: Iterable[Leaf]) -> int:
    return sum(1 for leaf in leaves if is_under(leaf.path, prefix))




def explain(
    token: int,
    signature: Sequence[Leaf],
    context: Sequence[tuple[str, str]],
    priors: Sequence[Prior],
) -> Explanation:
    """Explain a trace of the tf.function object ``token`` against earlier traces of the same code."""
    if not priors:
        return Explanation("first-trace", (), ())
    own = [p for p in priors if p.token == token]
    if not own:
        # A new tf.function object: its cache was empty, whatever the arguments.
        matches, leaf_changes, context_changes = closest(signature, context, priors)
        return Explanation(
            "new-function-object",
            tuple(leaf_changes + context_changes),
            tuple(p.index for p in matches),
        )
    matches, leaf_changes, context_changes = closest(signature, context, own)
    cause = cause_of(leaf_changes, context_changes)
    return Explanation(cause, tuple(leaf_changes + context_changes), tuple(p.index for p in matches))
