"""TensorFlow asked about a list argument passed as a tuple: each trace that got the list run beside the tuple's.

A call that passes ``[x, y]`` where other calls pass ``(x, y)`` (Keras' ``fit`` hands ``train_step`` a
tuple) traces once more: TensorFlow keys a list and a tuple apart. Written as a tuple at the call
site, the list's trace is no longer needed, but a body that appends to the argument, tests its type
or hands it to code that does would behave otherwise. TensorFlow says whether it does: each recorded
trace that got a list is run beside a fresh trace of the same Python function given the same
elements as a tuple, on the same inputs (run_compare), and every output must be the same bit for bit.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from tfretrace._tf.fresh import Untraced, counted, fresh_trace
from tfretrace._tf.probe import _differs, _replayed
from tfretrace._tf.run_compare import compare_converted

# Recorded traces that got a list, compared at most.
_MAX_TRACES = 16


def probe_as_tuple(function: Any, param: str) -> tuple[int, str | None]:
    """On how many inputs each recorded trace with ``param`` a list and the trace with that list a tuple computed
    the same, and why not where they did not or could not be run (``(0, why)``)."""
    import tensorflow as tf

    python = function.python_function
    names = list(inspect.signature(python).parameters)
    lists, others = [], []
    for trace in list(function._list_all_concrete_functions()):
        found = _replayed(trace, names, param)
        if found is None:
            return 0, "TensorFlow was not asked: a recorded trace's arguments cannot be replayed"
        args, kwargs, at = found
        if type(args[at] if isinstance(at, int) else kwargs[at]) is list:
            lists.append((trace, args, kwargs, at))
        else:
            others.append((trace, _key(tf, args, kwargs)))
    if not lists:
        return 0, "TensorFlow was not asked: no recorded trace that got a list is left"
    fresh = tf.function(python)  # noqa: TFR101  a fresh object: the program's own cache is untouched
    compared = 0
    try:
        for number, (trace, args, kwargs, at) in enumerate(lists[:_MAX_TRACES], 1):
            args, kwargs = _as_tuple(args, kwargs, at)
            # The edited call hits the run's own trace of the tuple where there is one (traced then, under the
            # Python state of then): that trace is the one to run. Else a fresh trace, as the edited call makes.
            general = next((t for t, key in reversed(others) if key == _key(tf, args, kwargs)), None)
            general = general or fresh_trace(tf, fresh, args, kwargs)
            if isinstance(general, Untraced):  # what TensorFlow says of the body given a tuple there
                return compared, f"TensorFlow could not trace the body with {param} a tuple ({general.why()})"
            parted = _differs(tf, general.structured_outputs, trace.structured_outputs)
            if parted is not None:
                return compared, f"given a tuple for trace #{number}'s list, {parted}"
            ran, differ = compare_converted(trace, general, functools.partial(_as_tuple, at=at), exact=True)
            compared += ran
            if differ is not None:
                return compared, f"TensorFlow ran trace #{number} ({param} a list) and the trace with a tuple: {differ}"
    finally:
        counted(fresh)
    return compared, None


def _key(tf: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A trace's arguments as comparable values: each spec by shape and dtype (its name aside), containers kept."""

    def one(value: Any) -> Any:
        if isinstance(value, tf.TensorSpec):
            return ("spec", None if value.shape.rank is None else tuple(value.shape.as_list()), value.dtype.name)
        plain = isinstance(value, (int, float, str, bool, type(None)))
        return ("value", type(value).__name__, value if plain else id(value))

    return tf.nest.map_structure(one, (tuple(args), dict(kwargs)))


def _as_tuple(args: tuple[Any, ...], kwargs: dict[str, Any], at: int | str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(at, int):
        return (*args[:at], tuple(args[at]), *args[at + 1:]), dict(kwargs)
    return tuple(args), {**kwargs, at: tuple(kwargs[at])}
