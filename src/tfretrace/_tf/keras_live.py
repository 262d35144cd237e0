"""Keras ``predict`` rows asked of the live model after the run: padded and not, do the kept rows' predictions match?

Reading a model's layers (``keras_rows``) can only vouch for Keras' own layers: a custom layer, a
subclassed model's ``call`` or a ``Lambda`` may or may not compute a row from other rows. The model
itself can say: while ``predict`` traces, the last rows it was given (the partial batch and the full
batch before it, copied: a few rows, never the whole input) are kept with the batch size; once the
program has finished, ``check_rows`` runs the live model's ``predict`` on those rows as they were and
padded as ``predict_full_batches`` pads them (the last row repeated to a full batch), for the rows
in their order and in two other orders (another batch around each row), and compares every output
of every kept row. Equal bit for bit, or in the last digits only (a batch of another size may take
another kernel: ``float-last-digits``, which the step announces): the rows are independent for
this edit. Anything else says which output and row moved.

A model whose predict traced a second input shape is held alive until the process ends (the first 8, and
only while they hold 10 million weights in all): a program that builds one model per loop turn has dropped
each before the run is asked. The rows kept of a tensor input (a string tensor: text models) serve the
call check only (``keras_call_check``).

Running ``predict`` again runs no user code the traces did not (the relaxed trace serves every batch
shape), and its prints are swallowed; it runs only where the probe may (after the program).
"""

from __future__ import annotations

import contextlib
import io
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tfretrace._tf.keras_rows import ROWS_INDEPENDENT, float32_eager, inputs_reason

_DEFAULT_BATCH = 32  # Keras' predict on arrays: `if not batch_size: batch_size = 32`
_MAX_SAMPLES = 4  # input shapes kept per model: each is one predict call's last rows
_MAX_TENSOR = 1_000_000  # elements of a tensor input read to keep its last rows (it is copied whole)
# float-last-digits, as bench/fix_judge.py reads it: within 1e-4 relative or 1e-6 absolute.
_RTOL, _ATOL = 1e-4, 1e-6


@dataclass(frozen=True)
class _Sample:
    """One traced ``predict`` call's last rows (a partial batch after at most one full batch) and its batch size."""

    x: Any
    batch: int
    shape: tuple[Any, ...]


_samples: weakref.WeakKeyDictionary[Any, list[_Sample]] = weakref.WeakKeyDictionary()
_verdicts: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
# A model that predicted on something the edit does not pad (a dataset, a tensor): the helper passes
# it to predict as it was, so its partial batch traces again whatever the rows say.
_refused: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
# A model whose predict traced a second input shape (a retrace its plan will ask about) is held
# alive until the process ends: a program that builds one model after another in a loop drops each
# one before the run is over, and a model that is gone cannot be asked. As with the nested defs
# ``counters`` keeps, bounded: the first few such models only.
_MAX_HELD = 8
# ... and small: a model the program dropped to make room for the next (a search over large models) must
# not stay in memory because of tfretrace. 10 million numbers in all: 40 MB of float32 weights.
_MAX_HELD_WEIGHTS = 10_000_000
_held: list[Any] = []
_held_weights = [0]
_asking: list[bool] = []  # set while check_rows runs predict: those calls are not the program's
# A tensor's last rows (copied to NumPy while predict traces: no op may run inside the trace), kept for
# the call check only (fix kind keras-call): padding does not reach a tensor, calling the model does.
_tensor_samples: weakref.WeakKeyDictionary[Any, list[_Sample]] = weakref.WeakKeyDictionary()


def remember_predict(model: Any, predict_locals: dict[str, Any]) -> None:
    """Keep the last rows of the input ``predict`` is tracing for (read while it runs; nothing is called)."""
    if _asking:
        return
    try:
        batch = predict_locals.get("batch_size") or _DEFAULT_BATCH
        if predict_locals.get("steps") is not None or type(batch) is not int or batch < 1:
            return
        x = predict_locals.get("x")
        refused = inputs_reason(x)
        if refused is None:
            # Float32 tensors are padded as the NumPy arrays they hold (keras-pad-rows' helper): their rows
            # are kept as NumPy, where small enough to read.
            x = _map(x, lambda a: _eager_rows(a) if float32_eager(a) else a)
            refused = None if _leaves(x) is not None else "predict was given a tensor too large to keep its rows"
        if refused is not None:
            _refused.setdefault(model, refused)
            _keep(_tensor_samples, model, _map(x, _eager_rows), batch)
            return
        _keep(_samples, model, x, batch)
        _verdicts.pop(model, None)  # a new input shape: ask again
    except Exception:  # bookkeeping must never break a user's predict (an unhashable model, odd inputs)
        return


def _keep(store: weakref.WeakKeyDictionary[Any, list[_Sample]], model: Any, x: Any, batch: int) -> None:
    """Keep a copy of the last rows of NumPy input ``x`` (a partial batch after at most one full batch)."""
    leaves = _leaves(x)
    if leaves is None:
        return
    rows = len(leaves[0])
    start = max(0, rows - (rows % batch or batch) - batch)
    shape = (batch, rows - start, *((a.shape[1:], a.dtype.str) for a in leaves))
    kept = store.setdefault(model, [])
    if len(kept) >= _MAX_SAMPLES or any(s.shape == shape for s in kept):
        return
    kept.append(_Sample(_map(x, lambda a: a[start:].copy()), batch, shape))
    if len(kept) > 1 and len(_held) < _MAX_HELD and not any(m is model for m in _held):
        size = _weights(model)
        if size is not None and _held_weights[0] + size <= _MAX_HELD_WEIGHTS:
            _held_weights[0] += size
            _held.append(model)


def _weights(model: Any) -> int | None:
    """How many numbers the model's weights hold (read from their shapes: no op runs), None where unknown."""
    total = 0
    for weight in getattr(model, "weights", ()):
        shape = getattr(weight, "shape", None)
        dims: list[Any] = list(shape) if shape is not None else [None]
        if any(not isinstance(d, int) for d in dims):
            return None
        total += math.prod(dims)
    return total


def _eager_rows(x: Any) -> Any:
    """A small eager tensor as NumPy, None for anything else (``_leaves`` then refuses the input).

    EagerTensor.numpy() reads the value already computed: no op runs inside the trace being made. It copies
    the whole tensor (slicing first would be an op), so only a small one is read: a few rows of text.
    """
    size = getattr(getattr(x, "shape", None), "num_elements", None)
    if type(x).__name__ != "EagerTensor" or not callable(size) or (size() or _MAX_TENSOR) >= _MAX_TENSOR:
        return None
    return x.numpy()


def kept_inputs(model: Any) -> list[tuple[Any, int]]:
    """The rows kept of each traced ``predict`` call of ``model`` with its batch size: NumPy as given, and
    tensors as tensors again (made here, after the program: a string tensor has no NumPy twin predict takes)."""
    import tensorflow as tf

    try:
        arrays = [(sample.x, sample.batch) for sample in _samples.get(model) or []]
        tensors = [(sample.x, sample.batch) for sample in _tensor_samples.get(model) or []]
    except TypeError:  # an unhashable model: nothing was kept
        return []
    return arrays + [(_map(x, tf.convert_to_tensor), batch) for x, batch in tensors]


@contextlib.contextmanager
def asking() -> Iterator[None]:
    """While it is held, ``predict`` calls are tfretrace's own (none of their rows is kept)."""
    _asking.append(True)
    try:
        yield
    finally:
        _asking.pop()


def check_rows(model: Any) -> str | None:
    """``ROWS_INDEPENDENT`` where the live model's kept rows predict alike padded and not, else why
    not; None where no partial batch was kept (nothing to ask)."""
    try:
        if model in _refused:
            return _refused[model]
        if getattr(model, "steps_per_execution", 1) != 1:
            return None  # predict groups batches by that number too: the reading of the layers says so
        if model in _verdicts:
            return _verdicts[model]
        samples = _samples.get(model) or []
    except TypeError:
        return None
    verdict = None
    with contextlib.ExitStack() as stack:
        stack.enter_context(asking())
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        for sample in list(samples):
            rows = sample.shape[1]
            if rows % sample.batch == 0:
                continue  # a call the edit leaves as it is
            try:
                found = _compare(model, sample)
            except Exception as exc:  # the model cannot be run again: unknown is not independent
                found = f"the model's predict could not be run again on the recorded rows ({type(exc).__name__})"
            if found is not None:
                verdict = found
                break
            verdict = ROWS_INDEPENDENT
    with contextlib.suppress(TypeError):
        _verdicts[model] = verdict
    return verdict


def _compare(model: Any, sample: _Sample) -> str | None:
    import numpy as np
    import tensorflow as tf

    rows = sample.shape[1]
    extra = -rows % sample.batch
    orders = (np.arange(rows), np.arange(rows)[::-1], np.roll(np.arange(rows), 1))
    # predict itself is what is asked (its batching, padded and not), a few times on purpose.
    for order in orders:
        x = _map(sample.x, lambda a, o=order: a[o])
        plain = model.predict(x, batch_size=sample.batch, verbose=0)  # noqa: TFR107
        padded = model.predict(  # noqa: TFR107
            _map(x, lambda a: np.concatenate([a, np.repeat(a[-1:], extra, axis=0)])),
            batch_size=sample.batch, verbose=0,
        )
        pairs = list(zip(tf.nest.flatten(plain), tf.nest.flatten(padded), strict=True))
        for i, (a, b) in enumerate(pairs):
            a, b = np.asarray(a), np.asarray(b)[:rows]
            if a.shape != b.shape or a.dtype != b.dtype:
                return f"padding the rows changed output {i}'s shape or dtype when the live model ran again"
            if np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                continue
            close = a.dtype.kind in "fc" and np.allclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=True)
            if not close:
                row = int(np.argwhere(~np.isclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=True))[0][0])
                return (f"the live model, run again on the recorded rows padded to a full batch, predicted other "
                        f"values for a kept row (output {i}, row {row} of {rows}): it computes a row from other rows")
    return None


def _leaves(x: Any) -> list[Any] | None:
    """The NumPy arrays of a predict input (a dict, list or tuple of them, or one), None for anything else."""
    import numpy as np

    if type(x) is dict:
        found: list[Any] = []
        for value in x.values():
            inner = _leaves(value)
            if inner is None:
                return None
            found += inner
        return found or None
    if type(x) in (list, tuple):
        found = []
        for value in x:
            inner = _leaves(value)
            if inner is None:
                return None
            found += inner
        return found or None
    return [x] if type(x) is np.ndarray and x.ndim > 0 else None


def _map(x: Any, fn: Any) -> Any:
    """``x`` with every array replaced by ``fn(array)``, its dicts, lists and tuples kept as they were."""
    if type(x) is dict:
        return {key: _map(value, fn) for key, value in x.items()}
    if type(x) in (list, tuple):
        return type(x)(_map(value, fn) for value in x)
    return fn(x)
