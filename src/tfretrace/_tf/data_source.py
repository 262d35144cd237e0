"""What a tf.data pipeline is built from: a fingerprint that tells the same pipeline built again
from one helper building pipelines of different data (make_ds(train), make_ds(val))."""

from __future__ import annotations

import hashlib
from typing import Any

# A pipeline is a few datasets deep; its constant tensors are its data (from_tensor_slices'
# arrays, TFRecord file names, range bounds) and its settings (batch size, shuffle buffer).
_MAX_DATASETS = 64
_MAX_TENSORS = 256
# Elements read from each end of a tensor: its dtype, shape and these tell two inputs apart
# without reading all of a large array.
_SAMPLE = 64
# Python functions (and objects between them) read behind one dataset function, and how deep.
_MAX_FUNCTIONS = 32
_MAX_DEPTH = 4


def fingerprint(dataset: Any) -> str | None:
    """A short digest of the constant tensors in ``dataset`` and the datasets it reads from.

    None when nothing can be read (a dataset kind whose inputs are not exposed): the caller
    then treats the build as before (any build after the first is a rebuild). Never raises,
    never runs a TensorFlow op (this runs inside a trace), never copies a whole tensor.
    """
    try:
        digest = hashlib.blake2b(digest_size=12)
        pending, datasets, tensors = [dataset], 0, 0
        while pending and datasets < _MAX_DATASETS:
            current = pending.pop()
            datasets += 1
            digest.update(type(current).__qualname__.encode())
            for name, value in sorted(vars(current).items()):
                python = getattr(value, "_func", None)  # a dataset function's wrapper: the Python it runs
                if callable(python):
                    digest.update(_python_source(python).encode())
                for tensor in _tensors(value):
                    if tensors >= _MAX_TENSORS:
                        break
                    tensors += 1
                    digest.update(name.encode())
                    digest.update(_sample(tensor))
            pending.extend(current._inputs())
        return digest.hexdigest()
    except Exception:  # a dataset this reading does not know: no fingerprint, today's rule
        return None


_PLAIN = (str, bytes, int, float, bool, type(None))


def closure_fingerprint(func: Any) -> str:
    """A digest of the plain values (str, numbers, None, tuples of them) a function closes over.

    One helper mapping ``lambda x: x[name]`` over the same dataset for several columns builds
    different pipelines: the same data, the same code, another value in the closure. Objects of
    other types are left out: a new one at every build would hide a real rebuild.
    """
    for _ in range(10):  # decorators around the user's function keep it in __wrapped__
        inner = getattr(func, "__wrapped__", None)
        if inner is None:
            break
        func = inner
    values = []
    for cell in getattr(func, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, _PLAIN) or (isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)):
            values.append(repr(value))
    if not values:
        return ""
    return hashlib.blake2b("\0".join(values).encode("utf-8", "backslashreplace"), digest_size=8).hexdigest()


def _python_source(func: Any) -> str:
    """The code and plain closure values of the Python a dataset function reaches, a few closures deep.

    ``from_generator`` keeps its data in Python: its datasets hold a constant 0 and call the generator
    through closures (``flat_map_fn`` -> ``generator_state`` -> the generator). Two generators of one
    helper (``rows(0, 8)``, ``rows(8, 12)``) differ in what they close over; the same one built into
    the pipeline again does not. Code is named by file and line, never by object identity (a rebuild
    makes new function objects), and only plain values are read (closure_fingerprint).
    """
    parts: list[str] = []
    pending: list[tuple[Any, int]] = [(func, 0)]
    seen: set[int] = set()
    while pending and len(seen) < _MAX_FUNCTIONS:
        current, depth = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        code = getattr(current, "__code__", None)
        if code is not None:
            parts.append(f"{code.co_filename}:{code.co_firstlineno}:{closure_fingerprint(current)}")
        if depth >= _MAX_DEPTH:
            continue
        values: list[Any] = []
        for cell in getattr(current, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        if code is None:  # an object a closure holds (TensorFlow's generator state): its attributes
            values.extend(v for v in getattr(current, "__dict__", {}).values())
        pending.extend((v, depth + 1) for v in values if callable(v) or hasattr(v, "__dict__"))
    return "|".join(sorted(parts))


def _tensors(value: Any) -> list[Any]:
    """The eager tensors held in one attribute (directly, or in a list, tuple or dict)."""
    if _is_eager(value):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if _is_eager(v)]
    if isinstance(value, dict):
        return [v for v in value.values() if _is_eager(v)]
    return []


def _is_eager(value: Any) -> bool:
    # EagerTensor, without importing TensorFlow's private module here: it has _numpy and a dtype.
    return type(value).__name__ == "EagerTensor" and hasattr(value, "_numpy")


def _sample(tensor: Any) -> bytes:
    """dtype, shape and the elements at both ends; variant and resource tensors by dtype only."""
    import numpy as np  # TensorFlow's own dependency: loaded whenever a dataset exists

    dtype = tensor.dtype
    head = f"{dtype.name}{tuple(tensor.shape)}".encode()
    if dtype.name in ("variant", "resource"):
        return head  # a handle: a new one at every build
    # On the CPU, _numpy() is a view of the tensor's buffer (numpy() would copy all of it).
    flat = np.asarray(tensor._numpy()).reshape(-1)
    if flat.size > 2 * _SAMPLE:
        flat = np.concatenate((flat[:_SAMPLE], flat[-_SAMPLE:]))
    if flat.dtype.kind == "O":  # strings: bytes objects, compared by value
        return head + repr(flat.tolist()).encode()
    return head + flat.tobytes()
