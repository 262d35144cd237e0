"""Fix suggestions as code to paste, derived from the traces actually observed (pure, no TF)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tfretrace.events import CONTAINERS, PYTHON, TENSOR, Change, KerasInfo, Leaf

_TOP = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*")


def suggest(
    cause: str,
    changes: Sequence[Change],
    signature: Sequence[Leaf],
    general: Sequence[Leaf] | None,
    *,
    name: str,
    location: str,
    call_site: str | None,
    keras: KerasInfo | None = None,
) -> str | None:
    """The fix for one trace as Python source, or None when nothing should change."""
    short = name.rsplit(".", 1)[-1]
    if short == "<lambda>":
        short = "fn"  # a lambda has no name to paste; call the tf.function object `fn`
    where = call_site or "the call site"
    if keras is not None:
        keras_fix = _keras_fix(cause, keras, where)
        if keras_fix is not None:
            return keras_fix
    if cause == "shape-changed":
        return _shape_fix(general or signature, short, location)
    if cause == "dtype-changed":
        return _dtype_fix(changes, where)
    if cause == "python-value-changed":
        return _python_value_fix(changes, signature, short, where)
    if cause == "structure-changed":
        return _structure_fix(changes, where)
    if cause == "object-identity":
        return _identity_fix(changes, short, where)
    if cause == "new-function-object":
        return _new_object_fix(name, name.rsplit(".", 1)[-1], location)
    if cause == "variable-spec-changed":
        return (
            f"# {where}: pass tf.Variables in the same arrangement on every call, or capture them\n"
            f"# instead of passing them: variables read inside {short} need not be arguments."
        )
    return None


def merge_signature(general: Sequence[Leaf] | None, signature: Sequence[Leaf]) -> list[Leaf]:
    """Fold one more signature into a running generalization: dims that differ become None.

    A signature of another structure (other paths or leaf kinds) starts a new generalization:
    an input_signature can only describe one structure.
    """
    if general is None or len(general) != len(signature):
        return list(signature)
    merged = []
    for base, leaf in zip(general, signature):
        if base.path != leaf.path or base.kind != leaf.kind:
            return list(signature)
        if leaf.kind == TENSOR and base.dtype == leaf.dtype and base.shape != leaf.shape:
            merged.append(_merge_shapes(base, leaf))
        else:
            merged.append(base)
    return merged


def _merge_shapes(a: Leaf, b: Leaf) -> Leaf:
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        shape: tuple[int | None, ...] | None = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return Leaf(a.path, a.kind, dtype=a.dtype, shape=shape)


def input_signature_code(signature: Sequence[Leaf]) -> str | None:
    """``input_signature=[...]`` source for a signature of tensors, containers and numbers.

    A Python int or float becomes a scalar TensorSpec (the caller must then pass tf.constant);
    anything else (objects, strings, None, bools) cannot be described, and None is returned.
    """
    for leaf in signature:
        if leaf.kind in CONTAINERS or leaf.kind == TENSOR:
            continue
        if leaf.kind == PYTHON and leaf.type_name in _NUMBER_DTYPES:
            continue
        return None
    by_path = {leaf.path: leaf for leaf in signature}
    lines = []
    for leaf in signature:
        if _is_top(leaf.path):
            note = f"  # {leaf.path}"
            if leaf.kind == PYTHON:
                note += f": now a tensor, pass tf.constant({leaf.path})"
            lines.append(f"    {_spec_source(leaf, by_path)},{note}")
    return "input_signature=[\n" + "\n".join(lines) + "\n]"


_NUMBER_DTYPES = {"int": "int64", "float": "float32"}


def _is_top(path: str) -> bool:
    match = _TOP.match(path)
    return match is not None and match.end() == len(path)


def _children(path: str, by_path: dict[str, Leaf]) -> list[Leaf]:
    out = []
    for child_path, leaf in by_path.items():
        rest = child_path[len(path) :]
        if child_path.startswith(path) and rest and rest[0] in "[.":
            tail = rest[1:]
            if rest[0] == "[":
                tail = tail[tail.index("]") + 1 :] if "]" in tail else tail
            else:
                tail = _TOP.sub("", tail, count=1)
            if not tail:
                out.append(leaf)
    return out


def _spec_source(leaf: Leaf, by_path: dict[str, Leaf]) -> str:
    if leaf.kind == PYTHON:
        return f"tf.TensorSpec(shape=[], dtype=tf.{_NUMBER_DTYPES[str(leaf.type_name)]})"
    if leaf.kind == TENSOR:
        shape = "None" if leaf.shape is None else "[" + ", ".join(
            "None" if d is None else str(d) for d in leaf.shape
        ) + "]"
        return f"tf.TensorSpec(shape={shape}, dtype=tf.{leaf.dtype})"
    kids = _children(leaf.path, by_path)
    parts = [_spec_source(k, by_path) for k in kids]
    if leaf.kind == "list":
        return "[" + ", ".join(parts) + "]"
    if leaf.kind == "tuple":
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if leaf.kind == "dict":
        keys = [k.path[len(leaf.path) + 1 : -1] for k in kids]
        return "{" + ", ".join(f"{key}: {p}" for key, p in zip(keys, parts)) + "}"
    fields = [k.path[len(leaf.path) + 1 :] for k in kids]
    return f"{leaf.type_name}(" + ", ".join(f"{f}={p}" for f, p in zip(fields, parts)) + ")"


def _shape_fix(general: Sequence[Leaf], short: str, location: str) -> str:
    code = input_signature_code(general)
    if code is None:
        if short == "fn":
            return (
                f"# {location}: let TensorFlow generalize the varying dimensions\n"
                "fn = tf.function(lambda *args: ..., reduce_retracing=True)"
            )
        return (
            f"# {location}: let TensorFlow generalize the varying dimensions of {short}\n"
            f"@tf.function(reduce_retracing=True)\ndef {short}(...):\n    ..."
        )
    if short == "fn":
        return (
            f"# {location}: leave the dimensions that varied open (None)\n"
            f"fn = tf.function(lambda *args: ..., {code})"
        )
    return (
        f"# {location}: leave the dimensions that varied open (None)\n"
        f"@tf.function({code})\ndef {short}(...):\n    ...\n"
        f"# or, without fixing the signature: @tf.function(reduce_retracing=True)"
    )


def _dtype_fix(changes: Sequence[Change], where: str) -> str:
    lines = [f"# {where}: cast to one dtype before calling (dtypes never generalize)"]
    for change in changes:
        if change.kind == "dtype":
            lines.append(f"{change.path} = tf.cast({change.path}, tf.{change.before})")
    return "\n".join(lines)


def _python_value_fix(
    changes: Sequence[Change], signature: Sequence[Leaf], short: str, where: str
) -> str:
    lines = [f"# {where}: each new Python value is a new graph; pass a tensor instead"]
    leaves = {leaf.path: leaf for leaf in signature}
    for change in changes:
        if change.kind not in ("python-value", "python-type"):
            continue
        leaf = leaves.get(change.path)
        type_name = leaf.type_name if leaf is not None else None
        if type_name in ("int", "float"):
            dtype = "tf.int64" if type_name == "int" else "tf.float32"
            lines.append(f"{short}(..., {change.path}=tf.constant({change.path}, dtype={dtype}))")
        elif type_name == "bool":
            lines.append(
                f"# {change.path} is a bool flag: two traces (True/False) are expected; pass "
                f"tf.constant({change.path}) only if it changes often"
            )
        else:
            lines.append(f"# keep {change.path} fixed for the function's lifetime, or encode it as a tensor")
    return "\n".join(lines)


def _structure_fix(changes: Sequence[Change], where: str) -> str:
    lines = [f"# {where}: pass the same structure on every call (never generalized)"]
    for change in changes:
        if change.kind == "leaf-kind" and change.after.startswith("Tensor"):
            lines.append(f"{change.path} = tf.constant({change.path})  # always a tensor, never a Python value")
        elif change.kind == "leaf-kind":
            lines.append(f"# {change.path}: was {change.before}, now {change.after}: pass one kind always")
        elif change.kind == "structure" and "len" in change.after:
            lines.append(f"{change.path} = tf.stack({change.path})  # one tensor; its length can vary")
        elif change.kind in ("structure", "added", "removed"):
            lines.append(f"# {change.path}: always pass the same keys/fields ({change.before} -> {change.after})")
    return "\n".join(lines)


def _identity_fix(changes: Sequence[Change], short: str, where: str) -> str:
    classes = sorted({c.after for c in changes if c.kind == "identity"})
    cls = classes[0] if classes else "Config"
    return (
        f"# {where}: {short} receives a new {cls} object per call, keyed by identity.\n"
        f"# Either create it once and reuse it:\n"
        f"{cls.lower()} = {cls}(...)  # outside the loop\n"
        f"# or make it a NamedTuple: TensorFlow compares namedtuple fields by value.\n"
        f"class {cls}(typing.NamedTuple):\n    ...  # the same fields"
    )


def _new_object_fix(name: str, short: str, location: str) -> str:
    if ".<locals>." in name:
        outer = name.split(".<locals>.")[0]
        return (
            f"# {location}: {short} is defined inside {outer}: each call of {outer}\n"
            f"# makes a new tf.function with an empty cache. Define it once at module level:\n"
            f"@tf.function\ndef {short}(...):\n    ...\n# and call that one object from {outer}."
        )
    if "." in name:
        cls = name.split(".")[-2]
        return (
            f"# {location}: each new {cls} instance gets its own tf.function for {short}.\n"
            f"# Reuse one {cls} instance, or decorate a module-level function the instances share:\n"
            f"@tf.function\ndef {short}(...):\n    ..."
        )
    if short == "<lambda>":
        return (
            f"# {location}: tf.function(lambda ...) is created again and again (e.g. inside a loop),\n"
            f"# each one with an empty cache. Create it once, before the loop, and reuse it:\n"
            f"fn = tf.function(lambda x: ...)  # outside the loop\nfor batch in data:\n    fn(batch)"
        )
    return (
        f"# {location}: tf.function({short}) is created again and again (e.g. inside a loop).\n"
        f"# Create it once and reuse it:\n{short}_fn = tf.function({short})  # outside the loop"
    )


def _keras_fix(cause: str, keras: KerasInfo, where: str) -> str | None:
    model, method = keras.model, keras.method
    built = keras.built_at or "where the model is built"
    if cause == "keras-new-model":
        return (
            f"# {where}: a new model ('{model}', built at {built}) is created for each {method} call.\n"
            f"# Build it once and reuse it:\nmodel = build_model()  # once, at start-up\n"
            f"for x in requests:\n    y = model.{method}(x)\n"
            f"# for a few small inputs, skip the predict loop machinery entirely:\n"
            f"y = model(x, training=False)"
        )
    if cause == "keras-recompile":
        return (
            f"# {where}: compile() was called again on '{model}', which resets its train/test/predict\n"
            f"# functions. Compile once; change the learning rate through the optimizer instead:\n"
            f"model.compile(optimizer=opt, loss=loss)  # once, before the loop\n"
            f"model.optimizer.learning_rate.assign(new_lr)"
        )
    if cause == "keras-load-model":
        return (
            f"# {where}: load_model() per call returns a new model that traces again.\n"
            f"model = keras.models.load_model(path)  # once, at start-up\ndef handle(x):\n"
            f"    return model.predict(x, verbose=0)"
        )
    if cause == "shape-changed" and method in ("predict", "predict_on_batch", "train_on_batch", "test_on_batch"):
        return (
            f"# {where}: '{model}'.{method} got inputs of a new shape. Pad to a few fixed sizes\n"
            f"# (buckets) so the shapes repeat, e.g. the batch dimension to a multiple of 32:\n"
            f"pad = -len(x) % 32\nx_padded = np.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))\n"
            f"y = model.{method}(x_padded)[: len(x)]"
        )
    if cause == "shape-changed":
        return (
            f"# {where}: '{model}'.{method} saw a new batch shape. Batch tf.data with\n"
            f"# drop_remainder=True, or keep shapes fixed, so every step has the same shape:\n"
            f"dataset = dataset.batch(32, drop_remainder=True)"
        )
    return None
