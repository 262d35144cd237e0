"""TensorFlow asked about ``reduce_retracing=True``: each recorded call traced again with its sizes open, and run.

``reduce_retracing`` writes no signature: after a shape changes, TensorFlow traces the body again with
``None`` where the sizes differed, Python arguments as they were. No signature text can say that
where a Python value is among the arguments (a ``mode`` flag beside the tensors), so the probe asks it
directly: a fresh ``tf.function`` of the same Python function (the program's object and cache are
untouched) traces each recorded call's arguments with the tensors' varying dimensions open and the
Python values as recorded, and the trace must give outputs of the recorded trace's structure, dtypes
and ranks, each static size open or equal (as for an ``input_signature``), and TensorFlow then runs the
relaxed trace and the recorded one on the same inputs (run_compare), to the same results within the last
digits of floats. A body with an effect outside its outputs (a print, a random draw) is not run, so it is
not vouched for; nor is a trace whose parameter to open was not a tensor (a variable an earlier step
passes as a tensor). Only the sizes the run recorded are run: a body special-casing a size no call had
(``if x.shape[0] == 1``) is not seen, as for a generalized ``input_signature``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from tfretrace._tf.fresh import Untraced, counted, fresh_trace
from tfretrace._tf.probe import _MAX_TRACES, _differs
from tfretrace._tf.recorded import recorded_arguments
from tfretrace._tf.run_compare import compare_converted, effect
from tfretrace.records.events import TraceRefused


def probe_relaxed(function: Any, opened: Mapping[str, Sequence[int | None]], also: Sequence[Any] = ()) -> str | None:
    """None where every recorded trace, its tensor parameters ``opened`` given those shapes, traces and runs as
    recorded; else why not (a ``TraceRefused`` where TensorFlow raised: the edited program would fail there).

    ``also``: other tf.function objects of the same def whose traces the one fresh function must give too
    (each object an outer def's call made, as one object made once would serve them all; ``opened`` empty).
    """
    import tensorflow as tf

    traces = [t for f in (function, *also) for t in f._list_all_concrete_functions()]
    if not traces:
        return "TensorFlow was not asked: no trace of the run is left to compare with"
    if len(traces) > _MAX_TRACES:
        return f"TensorFlow was asked of the first {_MAX_TRACES} traces of the run only"
    names = list(inspect.signature(function.python_function).parameters)
    how = "with the sizes open" if opened else "by one fresh function of the first object"
    fresh = tf.function(function.python_function)  # noqa: TFR101
    try:
        for number, trace in enumerate(traces, 1):
            found = recorded_arguments(trace)
            if found is None:
                return "TensorFlow was not asked: an object a trace was made for (a model passed in) is gone"
            made = _opened(tf, found, names, opened)
            if made is None:
                return "TensorFlow was not asked: a parameter to open was not a tensor in a trace of the run"
            args, kwargs = made
            concrete = fresh_trace(tf, fresh, args, kwargs)
            if isinstance(concrete, Untraced):  # the edited program would fail where TensorFlow raised
                return concrete.why() if concrete.created else TraceRefused(concrete.why())
            parted = _differs(tf, concrete.structured_outputs, trace.structured_outputs)
            if parted is not None:
                return f"traced {how}, {parted} (trace #{number})"
            found_effect = effect(trace.graph) or effect(concrete.graph)
            if found_effect is not None:
                # Never run (a print, a draw, a write): the outputs' structure alone does not show a body that
                # computes otherwise with the sizes open, so the step stays unsafe.
                return f"TensorFlow could not run both: the body has an effect outside its outputs ({found_effect})"
            _ran, differ = compare_converted(trace, concrete, lambda a, k: (a, k))
            if differ is not None:
                return f"TensorFlow ran trace #{number} and the one traced {how} on the same inputs: {differ}"
        return None
    finally:
        counted(fresh)


def _opened(
    tf: Any, found: tuple[tuple[Any, ...], dict[str, Any]], names: list[str], opened: Mapping[str, Sequence[int | None]]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The recorded arguments with each parameter of ``opened`` a spec of that shape (its own dtype); None where
    one was not a tensor of that rank in this trace (a variable an earlier step passes as a tensor, a list it
    stacks): the trace is not the one the edited calls make, and asking it would compare it with itself."""
    args, kwargs = list(found[0]), dict(found[1])
    for name, shape in opened.items():
        if name in kwargs:
            value = kwargs[name]
        elif name in names and names.index(name) < len(args):
            value = args[names.index(name)]
        else:
            return None
        if type(value) is not tf.TensorSpec or value.shape.rank != len(shape):
            return None
        spec = tf.TensorSpec(list(shape), value.dtype)
        if name in kwargs:
            kwargs[name] = spec
        else:
            args[names.index(name)] = spec
    return tuple(args), kwargs
