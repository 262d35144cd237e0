"""Keras ``predict`` made a call, asked of the live model after the run: do predict and the call give the same arrays?

The fix kind keras-call rewrites ``model.predict(x)`` into ``model(x, training=False).numpy()``.
Whether that is the same is a question about the model: a ``predict_step`` of its own returns other
values, several outputs come back as a list (which has no ``.numpy()``), a layer that updates a
variable or prints does so on every call instead of once per trace. Once the program has finished,
``check_call`` runs both on inputs of every recorded shape and dtype (the rows ``predict`` kept,
``tfretrace._tf.keras_live``, as the program gave them, and draws of each shape the run traced,
predicted in one batch as they were) and compares every output: same type and structure, shape and
dtype, values bit for bit or within the last digits (``run_compare``'s rule for generalized steps).

The model's variables are read before each run and restored after it; a run that changed one, a
public attribute of a layer, or printed anything, is an effect beyond the outputs and the answer is
no. A model whose ``predict``, ``predict_step`` or ``make_predict_function`` is its own is not run.
Running the model runs its layers' Python (``models_run`` counts the runs, as the probe counts the
bodies it traced); it happens only where the probe may (after the program), its prints swallowed.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tfretrace._tf.keras_live import asking, kept_inputs
from tfretrace._tf.run_compare import _last_digits
from tfretrace.records.events import CALL_DIGITS, CALL_SAME

# Draws per recorded shape, besides the rows predict kept.
_DRAWS = 2
# Methods whose own definition makes predict something other than the model's call.
_PREDICT_METHODS = ("predict", "predict_step", "make_predict_function")
_runs = [0]  # the model's Python run by these checks: each call, and each trace predict made


def models_run() -> int:
    """How many times the checks ran a model's Python (its eager calls and the traces ``predict`` made)."""
    return _runs[0]


def check_call(model: Any, shapes: Sequence[tuple[tuple[int, ...], str]]) -> tuple[str, int]:
    """``(CALL_SAME or CALL_DIGITS, inputs)`` where predict and the call agreed on every input tried,
    else ``(what differed, inputs that agreed before)``; ``shapes``: the recorded batch shapes and dtypes."""
    own = _own_predict(model)
    if own is not None:
        return f"the model defines its own {own}: predict runs it, the call does not", 0
    try:
        variables = list(getattr(model, "variables", ()))
        inputs = [*kept_inputs(model), *_draws(shapes)]
    except Exception as exc:  # a model whose state cannot be read is not run
        return f"the model's variables could not be read ({type(exc).__name__})", 0
    if not inputs:
        return "no input of the recorded shapes and dtypes could be made", 0
    traced = _tracing_count(model)
    try:
        return _compare(model, variables, inputs)
    except Exception as exc:  # reading or restoring the state failed: unknown is not the same
        return f"the model could not be run both ways ({type(exc).__name__})", 0
    finally:
        _runs[0] += _tracing_count(model) - traced


def _compare(model: Any, variables: list[Any], inputs: list[tuple[Any, int]]) -> tuple[str, int]:
    compared, digits = 0, False
    for number, (x, batch) in enumerate(inputs, 1):
        theirs, effect = _run(functools.partial(model.predict, x, batch_size=batch, verbose=0), model, variables)
        if effect is not None:
            return f"running the model's predict {effect}: an effect beyond its outputs", compared
        _runs[0] += 1
        ours, effect = _run(functools.partial(model, x, training=False), model, variables)
        if effect is not None:
            return f"calling the model {effect}: an effect beyond its outputs", compared
        if isinstance(theirs, BaseException) and isinstance(ours, BaseException):
            continue  # an input both refuse: not one they compute
        if isinstance(theirs, BaseException) or isinstance(ours, BaseException):
            failed, which = (theirs, "predict") if isinstance(theirs, BaseException) else (ours, "the call")
            return f"on input {number}, only {which} failed ({type(failed).__name__})", compared
        found = _differs(theirs, ours)
        if found is not None and found != CALL_DIGITS:
            return f"on input {number}, {found}", compared
        digits = digits or found == CALL_DIGITS
        compared += 1
    if not compared:
        return "no input of the recorded shapes ran both ways", 0
    return (CALL_DIGITS if digits else CALL_SAME), compared


def _own_predict(model: Any) -> str | None:
    """``Class.method`` of the first predict method the model's class defines outside Keras, else None."""
    for name in _PREDICT_METHODS:
        owner = next((c for c in type(model).__mro__ if name in vars(c)), None)
        if owner is not None and not owner.__module__.startswith(("keras.", "tf_keras.")):
            return f"{owner.__name__}.{name}"
    return None


def _run(run: Callable[[], Any], model: Any, variables: list[Any]) -> tuple[Any, str | None]:
    """The result (or the exception raised) and the effect the run had, None where none; the state restored."""
    kept = [variable.numpy() for variable in variables]
    attributes = [(layer, dict(_public(layer))) for layer in _layers(model)]
    printed = io.StringIO()
    try:
        with asking(), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            result = run()
    except Exception as exc:  # what the model raised on this input: compared by whether both raise
        result = exc
    effect = None
    for variable, value in zip(variables, kept, strict=True):
        if effect is None and variable.numpy().tobytes() != value.tobytes():
            effect = f"changed its variable {getattr(variable, 'path', None) or variable.name}"
        variable.assign(value)
    for layer, before in attributes:
        for name, value in _public(layer):
            if effect is None and (name not in before or (before[name] is not value and before[name] != value)):
                effect = f"changed {getattr(layer, 'name', type(layer).__name__)}.{name}"
        for name, value in before.items():
            if getattr(layer, name, None) != value:
                setattr(layer, name, value)
    if effect is None and printed.getvalue():
        effect = "printed (predict prints only when it traces, the call every time)"
    return result, effect


def _layers(model: Any) -> list[Any]:
    flatten = getattr(model, "_flatten_layers", None)
    return list(flatten(include_self=True)) if callable(flatten) else [model]


def _public(layer: Any) -> Iterator[tuple[str, Any]]:
    """A layer's public attributes of plain values (a counter a call would bump), as they are now."""
    for name, value in vars(layer).items():
        if not name.startswith("_") and type(value) in (int, float, str, bool, type(None)):
            yield name, value


def _differs(theirs: Any, ours: Any) -> str | None:
    """What differs between predict's result and ``ours.numpy()``; CALL_DIGITS where only the last digits."""
    import numpy as np

    if not hasattr(ours, "numpy"):
        return f"predict returned {_what(theirs)} and the call {_what(ours)}, which has no .numpy()"
    mine = np.asarray(ours.numpy())
    if type(theirs) is not np.ndarray:
        return f"predict returned {_what(theirs)} where the call returns an array"
    if (theirs.dtype, theirs.shape) != (mine.dtype, mine.shape):
        return (f"predict returned {theirs.dtype}{list(theirs.shape)} where the call returns "
                f"{mine.dtype}{list(mine.shape)}")
    if theirs.tobytes() == mine.tobytes():
        return None
    if theirs.dtype.kind in "fc" and _last_digits(np, mine, theirs):
        return CALL_DIGITS
    return "the call's values differ from predict's"


def _what(value: Any) -> str:
    """``a list of 2 arrays``, ``a dict of 2 tensors``, ``an array``."""
    if isinstance(value, (list, tuple, dict)):
        leaves = list(value.values()) if isinstance(value, dict) else list(value)
        word = "arrays" if leaves and all(type(v).__module__ == "numpy" for v in leaves) else "tensors"
        return f"a {type(value).__name__} of {len(leaves)} {word}"
    return "an array" if type(value).__module__ == "numpy" else f"a {type(value).__name__}"


def _draws(shapes: Sequence[tuple[tuple[int, ...], str]]) -> list[tuple[Any, int]]:
    """Random arrays of each recorded batch shape and dtype (ints small and non-negative: indices), each one batch."""
    import numpy as np

    rng = np.random.default_rng(0)  # a generator of its own: the program's NumPy stream is left as it was
    made = []
    for shape, dtype in shapes:
        kind = np.dtype(dtype).kind if dtype in np.sctypeDict else None
        if kind is None or not shape or shape[0] < 1:
            continue
        for _ in range(_DRAWS):
            if kind == "b":
                x = rng.integers(0, 2, shape).astype(bool)
            elif kind in "iu":
                x = rng.integers(0, 4, shape).astype(dtype)
            elif kind in "fc":
                x = rng.standard_normal(shape).astype(dtype)
            else:
                break
            made.append((x, shape[0]))
    return made


def _tracing_count(model: Any) -> int:
    function = getattr(model, "predict_function", None)
    counter = getattr(function, "experimental_get_tracing_count", None)
    try:
        return int(counter()) if callable(counter) else 0
    except Exception:  # a predict function of another kind: its traces are not counted
        return 0
