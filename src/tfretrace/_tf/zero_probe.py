"""TensorFlow asked about a None argument made zeros: the recorded trace that got None run beside the trace with zeros.

Fix kind zero-state writes ``tf.zeros(shape, dtype)`` where a call passed ``None`` (a recurrent
state's first step). The body's ``None`` branch decides whether that computes the same: where it
starts from zeros, yes; from ones or a learned state, no. TensorFlow says which: each recorded
trace that got ``None`` is run beside a fresh trace of the same Python function with a tensor of
that shape and dtype in its place, on the same other inputs (run_compare), the tensor being zeros.
Every output must be the same bit for bit: the step announces no change in the results.
"""

from __future__ import annotations

import inspect
from typing import Any

from tfretrace._tf.fresh import Untraced, counted, fresh_trace
from tfretrace._tf.probe import _replayed
from tfretrace._tf.run_compare import compare_runs

# Recorded traces that got None, compared at most.
_MAX_TRACES = 16


def probe_zeros(function: Any, param: str, shape: tuple[int, ...], dtype: str) -> tuple[int, str | None]:
    """On how many inputs each recorded trace with ``param`` None and the trace with zeros there computed the
    same, and why not where they did not or could not be run (``(0, why)``)."""
    import tensorflow as tf

    python = function.python_function
    names = list(inspect.signature(python).parameters)
    nones = []
    for trace in list(function._list_all_concrete_functions()):
        found = _replayed(trace, names, param)
        if found is None:
            return 0, "TensorFlow was not asked: a recorded trace's arguments cannot be replayed"
        args, kwargs, at = found
        if (args[at] if isinstance(at, int) else kwargs[at]) is None:
            nones.append((trace, args, kwargs, at))
    if not nones:
        return 0, "TensorFlow was not asked: no recorded trace that got None is left"
    spec = tf.TensorSpec(shape, getattr(tf, dtype))
    fresh = tf.function(python)  # noqa: TFR101  a fresh object: the program's own cache is untouched
    compared = 0
    try:
        for number, (trace, args, kwargs, at) in enumerate(nones[:_MAX_TRACES], 1):
            if isinstance(at, int):
                args = (*args[:at], spec, *args[at + 1:])
            else:
                kwargs = {**kwargs, at: spec}
            general = fresh_trace(tf, fresh, args, kwargs)
            if isinstance(general, Untraced):  # what TensorFlow says of the body with a tensor there
                return compared, f"TensorFlow could not trace the body with {param} a tensor ({general.why()})"
            ran, differ = compare_runs(trace, general, at, tf.zeros(shape, getattr(tf, dtype)), exact=True)
            compared += ran
            if differ is not None:
                return compared, f"TensorFlow ran trace #{number} ({param}=None) and the trace with zeros: {differ}"
    finally:
        counted(fresh)
    return compared, None
