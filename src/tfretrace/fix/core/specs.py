"""Source text of an input_signature for a recorded signature, in the user's own TensorFlow alias."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tfretrace.records.events import CONTAINERS, PYTHON, TENSOR, Leaf

_TOP = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
# What a Python number becomes at an input_signature boundary: tf.constant's own default dtypes.
NUMBER_DTYPES = {"int": "int32", "float": "float32"}


def is_top(path: str) -> bool:
    """True for a parameter itself, not a part of one."""
    return _TOP.match(path) is not None


def shape_text(shape: tuple[int | None, ...] | None) -> str:
    """``[None, 10]``; ``None`` for unknown rank."""
    if shape is None:
        return "None"
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def spec_text(leaf: Leaf, tf: str = "tf") -> str:
    """``tf.TensorSpec(shape=[None, 10], dtype=tf.float32)`` for a tensor leaf."""
    return f"{tf}.TensorSpec(shape={shape_text(leaf.shape)}, dtype={tf}.{leaf.dtype})"


def signature_specs(signature: Sequence[Leaf], params: Sequence[str], tf: str = "tf") -> list[str] | None:
    """One spec source per parameter, in ``params`` order, or None when one cannot be written."""
    tops = [leaf.path for leaf in signature if is_top(leaf.path)]
    if sorted(tops) != sorted(params):
        return None
    by_path = {leaf.path: leaf for leaf in signature}
    out = []
    for name in params:
        text = _spec_source(by_path[name], by_path, tf)
        if text is None:
            return None
        out.append(text)
    return out


def _spec_source(leaf: Leaf, by_path: dict[str, Leaf], tf: str) -> str | None:
    if leaf.kind == TENSOR:
        return spec_text(leaf, tf)
    if leaf.kind == PYTHON and leaf.type_name in NUMBER_DTYPES:
        return f"{tf}.TensorSpec(shape=[], dtype={tf}.{NUMBER_DTYPES[str(leaf.type_name)]})"
    if leaf.kind not in CONTAINERS:
        return None
    kids = [k for p, k in by_path.items() if _is_child(leaf.path, p)]
    parts = [_spec_source(k, by_path, tf) for k in kids]
    if any(p is None for p in parts):
        return None
    texts = [str(p) for p in parts]
    if leaf.kind == "list":
        return "[" + ", ".join(texts) + "]"
    if leaf.kind == "tuple":
        return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    if leaf.kind == "dict":
        keys = [k.path[len(leaf.path) + 1 : -1] for k in kids]
        return "{" + ", ".join(f"{key}: {p}" for key, p in zip(keys, texts)) + "}"
    # A namedtuple or attrs class would be called when the edited file is imported: `fix --apply`
    # writes no call but TensorFlow's spec constructors (fix.core.declaration), so none is planned.
    return None


def _is_child(parent: str, path: str) -> bool:
    rest = path[len(parent) :]
    if not path.startswith(parent) or not rest or rest[0] not in "[.":
        return False
    if rest[0] == "[":
        close = rest.find("]")
        return close == len(rest) - 1
    return _TOP.match(rest[1:]) is not None
