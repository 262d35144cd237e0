"""What changed between two traces' signatures, leaf by leaf, and the one cause those changes make."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tfretrace.records.events import CONTAINERS, OBJECT, PYTHON, SPEC, TENSOR, VARIABLE, Change, Leaf, format_shape

# When several kinds of change appear at once, the cause is the one that cannot be generalized
# away first: a structure or dtype change still retraces under reduce_retracing, a shape does not.
_CAUSE_OF_KIND = {
    "structure": "structure-changed",
    "leaf-kind": "structure-changed",
    "added": "structure-changed",
    "removed": "structure-changed",
    "dtype": "dtype-changed",
    "python-value": "python-value-changed",
    "python-type": "python-value-changed",
    "identity": "object-identity",
    "variable": "variable-spec-changed",
    "shape": "shape-changed",
    "rank": "shape-changed",
    "spec": "structure-changed",
}


_PRIORITY = (
    "structure-changed",
    "dtype-changed",
    "python-value-changed",
    "object-identity",
    "variable-spec-changed",
    "shape-changed",
)


def diff_signatures(before: Sequence[Leaf], after: Sequence[Leaf]) -> list[Change]:
    """Every leaf that differs, as Change records; children of a changed container are skipped."""
    old = {leaf.path: leaf for leaf in before}
    new = {leaf.path: leaf for leaf in after}
    changes: list[Change] = []
    broken: list[str] = []  # containers whose shape changed: their children are not compared

    def under_broken(path: str) -> bool:
        return any(is_under(path, b) for b in broken)

    for leaf in after:
        if under_broken(leaf.path):
            continue
        prev = old.get(leaf.path)
        if prev is None:
            changes.append(Change(leaf.path, "added", "absent", leaf.describe()))
            continue
        change = diff_leaf(prev, leaf)
        if change is not None:
            changes.append(change)
            if change.kind in ("structure", "leaf-kind"):
                broken.append(leaf.path)
    for leaf in before:
        if leaf.path not in new and not under_broken(leaf.path):
            changes.append(Change(leaf.path, "removed", leaf.describe(), "absent"))
    return changes


def diff_leaf(before: Leaf, after: Leaf) -> Change | None:
    """The change between two leaves at the same path, or None when the earlier one covers it."""
    path = after.path
    if before.kind != after.kind:
        return Change(path, "leaf-kind", before.describe(), after.describe())
    kind = after.kind
    if kind in (TENSOR, VARIABLE):
        if before.dtype != after.dtype:
            return Change(path, "dtype", str(before.dtype), str(after.dtype))
        shape_change = _shape_change(path, before.shape, after.shape)
        if shape_change is not None:
            return shape_change
        if kind == VARIABLE and before.extra != after.extra:
            return Change(path, "variable", _extra_text(before), _extra_text(after))
        return None
    if kind == PYTHON:
        if before.type_name != after.type_name:
            return Change(
                path,
                "python-type",
                f"{before.type_name} {before.value}",
                f"{after.type_name} {after.value}",
            )
        if before.value != after.value or before.extra != after.extra:
            # Long values are shown cut; the hash of the full text tells them apart.
            same_text = before.value == after.value
            detail = "the values differ in the part not shown" if same_text else ""
            return Change(path, "python-value", f"{after.type_name} {before.value}", str(after.value), detail)
        return None
    if kind == OBJECT:
        if before.ident != after.ident or before.alive is False:
            how = dict(after.extra).get("compared_by", "identity")
            detail = "compared by identity" if how == "identity" else "not equal (__eq__)"
            if before.alive is False:
                detail = "the earlier object was garbage-collected"
            return Change(
                path,
                "identity",
                str(before.type_name),
                str(after.type_name),
                detail=f"{detail}: {before.value} -> {after.value}",
            )
        return None
    if kind in CONTAINERS:
        if before.type_name != after.type_name or before.value != after.value:
            return Change(path, "structure", before.describe(), after.describe())
        return None
    if kind == SPEC:
        same_type = before.type_name == after.type_name
        if same_type and before.dtype is not None and after.dtype is not None and before.dtype != after.dtype:
            return Change(path, "dtype", str(before.dtype), str(after.dtype))  # ragged, sparse...
        shape_change = _shape_change(path, before.shape, after.shape)
        if shape_change is not None and same_type:
            return shape_change
        if before.value != after.value or not same_type or before.extra != after.extra:
            return Change(path, "spec", str(before.value), str(after.value))
        return None
    if before != after:
        return Change(path, "structure", before.describe(), after.describe())
    return None


def _shape_change(
    path: str, before: tuple[int | None, ...] | None, after: tuple[int | None, ...] | None
) -> Change | None:
    # An earlier trace with unknown rank or a None dimension covers every value there, exactly
    # like TensorFlow's subtype dispatch, so it is not a difference.
    if before is None:
        return None
    if after is None or len(before) != len(after):
        return Change(path, "rank", format_shape(before), format_shape(after))
    dims = [i for i, (b, a) in enumerate(zip(before, after)) if b is not None and b != a]
    if not dims:
        return None
    detail = ("dim " if len(dims) == 1 else "dims ") + ", ".join(str(d) for d in dims)
    return Change(path, "shape", format_shape(before), format_shape(after), detail)


def _extra_text(leaf: Leaf) -> str:
    return ", ".join(f"{k}={v}" for k, v in leaf.extra)


def diff_context(
    before: Iterable[tuple[str, str]], after: Iterable[tuple[str, str]]
) -> list[Change]:
    """Changes in the tracing context (scope, device, graph, XLA, strategy)."""
    old, new = dict(before), dict(after)
    return [
        Change(f"<context>.{name}", "context", old.get(name, "absent"), new.get(name, "absent"))
        for name in sorted(set(old) | set(new))
        if old.get(name) != new.get(name)
    ]


def cause_of(leaf_changes: Sequence[Change], context_changes: Sequence[Change]) -> str:
    """One cause slug for a set of changes."""
    if leaf_changes:
        found = {_CAUSE_OF_KIND.get(c.kind, "structure-changed") for c in leaf_changes}
        for cause in _PRIORITY:
            if cause in found:
                return cause
        return "structure-changed"
    for change in context_changes:
        if (
            change.path == "<context>.scope_type"
            and change.before == "VARIABLE_CREATION"
            and change.after == "NO_VARIABLE_CREATION"
        ):
            return "variable-creation"
    if context_changes:
        return "context-changed"
    return "unexplained"


def is_under(path: str, prefix: str) -> bool:
    """Whether ``path`` names a leaf inside the container at ``prefix`` (``x[0]``, ``x.a``)."""
    return len(path) > len(prefix) and path.startswith(prefix) and path[len(prefix)] in "[."
