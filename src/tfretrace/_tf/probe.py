"""TensorFlow as the oracle for a generalized signature: trace a fresh copy of the live function and compare outputs.

A signature with open dimensions changes what the body sees (``None`` where each call had a
size). Whether that matters is TensorFlow's to say: the function's Python body, wrapped in a new
``tf.function`` with the generalized ``input_signature`` (the user's own object and its cache are
not touched), is traced once with ``get_concrete_function()``. The signature is taken as safe only
if that trace succeeds and its outputs have the structure, dtypes and ranks of every trace the run
made, each static dimension either open or equal to what every trace had. A Python number, bool
or list of numbers passed as a tensor is asked the same way (``probe_argument``): each trace of
the run is replayed with that argument a tensor of one dtype, and the dtype is the first whose
traces give the run's outputs. Tracing runs the body's Python once more (its prints are
swallowed; other side effects happen), so the monitor probes only once the program has finished.
A step that edits the body is asked of the def as it writes it (_tf.edited), run beside every
recorded trace.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator, Sequence
from typing import Any

from tfretrace._tf.built_inside import BUILT_INSIDE, built_lazily, opens_fixed
from tfretrace._tf.draws import graph_draws
from tfretrace._tf.edited import converter, rebuilt, runs_alike
from tfretrace._tf.fresh import CREATES, Untraced, counted, failed, fresh_trace, no_new_variables, one_line, quiet
from tfretrace._tf.graph_compare import value_only_as_data
from tfretrace._tf.recorded import holds, part, recorded_arguments, split_path, with_part
from tfretrace._tf.run_compare import compare_converted, compare_runs
from tfretrace.records.events import INT_AS_CONVERTED, TraceRefused

# A fix that edits the body: the edited file's text and the line of the def (``_tf.edited``).
Edited = tuple[str, int]

# Outputs compared per function: the traces the run made (the first ones are enough to see a
# rank or a dtype change; every one is checked for a static size).
_MAX_TRACES = 64


def probe_signature(
    function: Any, signature: str, alias: str, edited: Edited | None = None, also: Sequence[Any] = ()
) -> str | None:
    """None where TensorFlow traces ``function``'s body with ``signature`` as each recorded trace did; else why not.

    ``signature`` is the text tfretrace writes (``[tf.TensorSpec(shape=[None, None], dtype=tf.int32)]``,
    or ``[dist_dataset.element_spec]``) with the file's name for tensorflow, ``alias``. ``edited``:
    an earlier step edits the body; the edited def is traced instead, and TensorFlow runs it and
    every recorded trace on the same inputs, to the same results or not (_tf.edited). ``also``: other
    tf.function objects of the same def whose traces the one fresh trace must match too (each object
    a nested def's outer call made, as one def hoisted to module level).
    """
    import tensorflow as tf

    python = function.python_function
    if edited is not None:
        python = rebuilt(python, *edited)
        if python is None:
            return _NOT_REBUILT

    traces = [t for f in (function, *also) for t in f._list_all_concrete_functions()][:_MAX_TRACES]
    if not traces:
        return "no trace of the run is left to compare with"
    names = {alias: tf, "tf": tf}
    # `[dist_dataset.element_spec]`: the dataset is the module-level name the decorator will read,
    # taken from the def's own globals as the program left them.
    for name in re.findall(r"\b([A-Za-z_]\w*)\.element_spec\b", signature):
        if name not in function.python_function.__globals__:
            return f"{name} is not a module-level name of the function's file"
        names[name] = function.python_function.__globals__[name]
    try:
        specs = eval(signature, {"__builtins__": {}}, names)  # the text tfretrace wrote itself
        fresh = tf.function(python, input_signature=specs)
    except Exception as exc:  # what TensorFlow says: the signature itself is refused
        return TraceRefused(one_line(exc))
    if opens_fixed(tf, specs, traces) and built_lazily(traces, (function, *also)):
        # The edited program's first call runs that build again under this signature: a layer reading
        # x.shape[-1] gets None where each call had a size. Only the sizes every call had stay asked.
        return BUILT_INSIDE
    try:
        said = _traced_as_recorded(tf, fresh, traces, signature)
        if said is not None or edited is None:
            return said
        # The body is not the one the run traced: its outputs are asked too, not only their shapes.
        with quiet(), no_new_variables(tf):
            general = fresh.get_concrete_function()
        _ran, differ = runs_alike(tf, traces, general, list(inspect.signature(python).parameters))
        return None if differ is None else f"traced with the open signature, the edited body ran otherwise: {differ}"
    finally:
        counted(fresh)


_NOT_REBUILT = (
    "TensorFlow was not asked: the def as the fix edits it could not be made in memory (a closure, or a method "
    "TensorFlow wrapped)"
)


def _traced_as_recorded(tf: Any, fresh: Any, traces: list[Any], signature: str) -> str | None:
    created: list[str] = []
    try:
        with quiet(), no_new_variables(tf) as created:
            outputs = fresh.get_concrete_function().structured_outputs
    except Exception as exc:  # what TensorFlow says: the body cannot be traced with open dimensions
        failed()
        if created:
            return CREATES.format(created[0])
        return TraceRefused(one_line(exc))
    # A dataset's element_spec is taken from elsewhere, not folded from the run's calls as tfretrace's
    # own signatures are (their replay already binds every call): TensorFlow binds each call to it.
    taken = bool(re.search(r"\.element_spec\b", signature))
    for number, trace in enumerate(traces, 1):
        reason = _differs(tf, outputs, trace.structured_outputs) or (_refused(tf, fresh, trace) if taken else None)
        if reason is not None:
            return f"traced with the open signature, {reason} (trace #{number})"
    return None


def _refused(tf: Any, fresh: Any, trace: Any) -> str | None:
    """Why the signature would not take a recorded call's arguments as its one trace, or None where it does.

    For a signature taken from elsewhere (a distributed dataset's ``element_spec``, which says
    nothing of calls fed by another dataset): TensorFlow binds each trace's recorded arguments to
    it. A refusal, or a second trace, is a call of the run the edited program would fail or
    retrace on.
    """
    found = recorded_arguments(trace)
    if found is None:
        return None  # an object keyed by identity that is gone cannot be replayed; its outputs were compared
    args, kwargs = found
    # A recorded spec carries its parameter's name, which TensorFlow will not cast to a signature's
    # unnamed spec: the call binds values, so only shape and dtype are asked.
    args, kwargs = tf.nest.map_structure(
        lambda x: tf.TensorSpec(x.shape, x.dtype) if isinstance(x, tf.TensorSpec) else x, (args, kwargs)
    )
    try:
        with quiet(), no_new_variables(tf):
            fresh.get_concrete_function(*args, **kwargs)
    except Exception as exc:  # TensorFlow's own binding of the recorded arguments to the signature
        return f"the signature refuses a call of the run ({one_line(exc)})"
    if fresh.experimental_get_tracing_count() != 1:
        return "a call of the run traced again under the signature"
    return None


def probe_argument(
    function: Any, param: str, dtypes: Sequence[str], edited: Edited | None = None
) -> tuple[str | None, str | None, str | None, int]:
    """The first of ``dtypes`` with which TensorFlow traces the body, ``param`` a tensor, as the run did.

    Each trace of the run is traced again by a fresh ``tf.function`` of the same Python function,
    with its own arguments (tensors as their specs, Python values as they were) except ``param``,
    which becomes ``tf.TensorSpec([], dtype)`` (a list of numbers: ``[its length]``, what
    ``tf.constant`` of it gives): the dtype is kept where every such trace succeeds
    with the outputs (structure, dtypes, ranks, static sizes open or equal) of the trace it
    replays. Returns ``(dtype, None, depends, compared)``: ``depends`` is None where every trace's
    graph is the tensor's graph with the value as data (graph_compare) or, where the graphs part,
    both computed the same on every input TensorFlow ran them on (run_compare: ``compared`` says how
    many inputs), else where they part; ``(None, what TensorFlow said of each dtype, None, 0)``
    where none does; ``(None, None, None, 0)`` where TensorFlow could not be asked (no trace left,
    an argument the trace did not keep, such as a model passed as an argument). A trace that would
    create a variable is refused before it does (``no_new_variables``). ``edited``: the step edits
    the body too; the edited def (_tf.edited) is traced instead, and TensorFlow always runs it and
    each recorded trace on the same inputs (a list of tensors passed stacked, as the fix writes it).
    """
    import tensorflow as tf

    python = function.python_function
    if edited is not None:
        python = rebuilt(python, *edited)
        if python is None:
            return None, None, None, 0  # not asked: the step stays as unchecked as before
    every = list(function._list_all_concrete_functions())
    traces = every[:_MAX_TRACES]
    names = list(inspect.signature(python).parameters)
    top, key = split_path(param)
    bound = [_replayed(trace, names, top) for trace in traces]
    if not traces or any(b is None or not holds(_value_at(b), key) for b in bound):
        return None, None, None, 0
    # A trace that got a tensor there already (a call site that passes one: the step leaves it as it is) is not
    # replayed; the traces of the Python values are.
    valued = [(t, b) for t, b in zip(traces, bound, strict=True)
              if not isinstance(part(_value_at(b), key), tf.TensorSpec)]
    if not valued:
        return None, None, None, 0
    traces, bound = [t for t, _b in valued], [b for _t, b in valued]
    refused: list[str] = []
    for dtype in dtypes:
        # INT_AS_CONVERTED: a Python int as TensorFlow converts one, int32 where it fits (every recorded value)
        # and int64 beyond: the int32 traces as for "int32", then int64 ones to the same values, wider.
        why, depends, compared = None, None, 0
        for width in ("int32", "int64") if dtype == INT_AS_CONVERTED else (dtype,):
            # A new tf.function per dtype on purpose: each probe starts from an empty cache, and the
            # program's own object and cache are untouched.
            fresh = tf.function(python)  # noqa: TFR101
            try:
                wide = dtype == INT_AS_CONVERTED and width == "int64"
                why, depends, ran = _each_trace(tf, fresh, traces, bound, param, width, len(every),
                                                names, edited is not None, key, widened=wide)
            finally:
                counted(fresh)
            compared += ran
            if why is not None or depends is not None:
                break
        if why is None:
            return dtype, None, depends, compared if depends is None else 0
        refused.append(why)
    return None, "; ".join(refused), None, 0



def _each_trace(
    tf: Any, fresh: Any, traces: list[Any], bound: list[Any], param: str, dtype: str, total: int,
    names: list[str], edited: bool, key: int | str | None = None, widened: bool = False,
) -> tuple[str | None, str | None, int]:
    """Each recorded trace traced by ``fresh`` with ``param`` a ``dtype`` tensor: (why not, where the
    graph depends on the value, how many inputs TensorFlow ran both versions on). An edited body
    (``edited``; ``names``: the parameters) is always run, its graph being another body's; so is a
    variable passed as a tensor (its graph reads a placeholder where the trace read the variable).
    ``widened``: an int64 trace standing for the values beyond int32, always run, its integer outputs
    compared with the recorded int32 ones as values."""
    why = None
    compared = 0
    depends = None if total <= _MAX_TRACES else f"only the first {_MAX_TRACES} traces of the run were compared"
    for number, (trace, found) in enumerate(zip(traces, bound, strict=True), 1):
        assert found is not None
        args, kwargs, at = found
        whole = args[at] if isinstance(at, int) else kwargs[at]
        value = part(whole, key)
        spec = tf.TensorSpec(_stacked(tf, value), getattr(tf, dtype))
        if isinstance(at, int):
            args = (*args[:at], with_part(whole, key, spec), *args[at + 1:])
        else:
            kwargs = {**kwargs, at: with_part(whole, key, spec)}
        concrete = fresh_trace(tf, fresh, args, kwargs)
        if isinstance(concrete, Untraced):
            said = concrete.why() if concrete.created else f"TensorFlow could not trace the body ({concrete.why()})"
            why = f"{dtype}: {said}"
            break
        outputs = concrete.structured_outputs
        differs = _differs(tf, outputs, trace.structured_outputs, widened)
        if differs is not None:
            why = f"{dtype}: TensorFlow traced the body, {differs}"
            break
        # A number inside a tuple or dict: its placeholder is not the parameter's, so only running both
        # versions (each recorded value passed as the tensor the call site makes) can say.
        if depends is None and (edited or widened or _variable(value) or key is not None):
            # An element is compared bit for bit: a float32 tensor packed into a list beside float64
            # numbers is cast silently, and only exact results show the float32 rounding of the value.
            ran, differ = compare_converted(trace, concrete, converter(tf, concrete, names), exact=key is not None,
                                            widened=widened)
            compared += ran
            if differ is not None:
                ran_what = "the edited body" if edited else f"the trace with {param} a tensor"
                depends = f"TensorFlow ran trace #{number} and {ran_what} on the same inputs: {differ}"
        elif depends is None:
            parts = value_only_as_data(trace.graph, concrete.graph, param, value)
            if parts is not None:
                # Other graphs may still compute the same: TensorFlow runs both on the same inputs.
                ran, differ = compare_runs(trace, concrete, at, tf.constant(value, dtype=getattr(tf, dtype)))
                compared += ran
                if differ is not None:
                    depends = (f"the graph depends on the value: trace #{number} ({param}={value!r}): {parts}; "
                               f"run on the same inputs: {differ}")
    return why, depends, compared


def _stacked(tf: Any, value: Any) -> list[int | None] | None:
    """The shape of ``param`` as the call site passes it: a scalar, a list of numbers (its length), or a
    list of tensors of one shape, stacked (its length, then their shape; None where their rank is unknown)."""
    if _variable(value):
        return list(value.shape.as_list()) if value.shape.rank is not None else None
    if not isinstance(value, (list, tuple)):
        return []
    if value and all(isinstance(v, tf.TensorSpec) for v in value):
        shape = value[0].shape
        return None if shape.rank is None else [len(value), *shape.as_list()]
    return [len(value)]


def _variable(value: Any) -> bool:
    """Whether a recorded argument is a variable's spec (the trace read a variable passed in)."""
    from tensorflow.python.ops.resource_variable_ops import VariableSpec

    return isinstance(value, VariableSpec)


def _random_ops(function: Any) -> Iterator[tuple[str, bool]]:
    """Each stateful random op in the function's traces (nested functions included), and whether it had a seed."""
    for trace in list(function._list_all_concrete_functions())[:_MAX_TRACES]:
        yield from graph_draws(trace.graph)


def random_op(function: Any) -> str | None:
    """The first stateful random op the run's traces draw from, seeded or not, or None.

    Each trace holds its own such op, with its own stream: fewer traces draw other numbers. Read
    from the graphs, so a draw inside a called Keras layer or a helper counts, which the def's
    source does not show.
    """
    return next((kind for kind, _seeded in _random_ops(function)), None)


def unseeded_draws(function: Any) -> str | None:
    """The stateful random op the run's traces drew from with no seed at all, or None (a seed, or no such op).

    Read from TensorFlow's own state, not the source (``_random_ops``); the global seed, which
    ``keras.utils.set_random_seed`` sets, is asked too.
    """
    from tensorflow.python.eager import context

    if context.global_seed() is not None:
        return None
    found: str | None = None
    for kind, seeded in _random_ops(function):
        if seeded:
            return None  # a seeded draw: its stream is one a run can repeat
        found = found or kind
    return found


def _value_at(found: tuple[tuple[Any, ...], dict[str, Any], int | str] | None) -> Any:
    """The recorded value of the parameter ``_replayed`` located."""
    assert found is not None
    args, kwargs, at = found
    return args[at] if isinstance(at, int) else kwargs[at]


def _replayed(trace: Any, names: list[str], param: str) -> tuple[tuple[Any, ...], dict[str, Any], int | str] | None:
    """A trace's arguments as TensorFlow kept them (objects passed in: the live ones, ``recorded_arguments``),
    and where ``param`` sits (an index or a keyword)."""
    found = recorded_arguments(trace)
    if found is None:
        return None
    args, kwargs = found
    if param in kwargs:
        return tuple(args), dict(kwargs), param
    if param in names and names.index(param) < len(args):
        return tuple(args), dict(kwargs), names.index(param)
    return None


def _differs(tf: Any, probed: Any, recorded: Any, widened: bool = False) -> str | None:
    try:
        tf.nest.assert_same_structure(probed, recorded, expand_composites=True)
    except (TypeError, ValueError):
        return "its outputs have another structure than a trace of the run had"
    for i, (a, b) in enumerate(zip(tf.nest.flatten(probed, expand_composites=True),
                                   tf.nest.flatten(recorded, expand_composites=True), strict=True)):
        if hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(b, "shape") and hasattr(b, "dtype"):
            if a.dtype != b.dtype and not (widened and a.dtype.is_integer and b.dtype.is_integer):
                return f"output {i} is {a.dtype.name} where a trace of the run gave {b.dtype.name}"
            sa, sb = a.shape, b.shape
            if sa.rank != sb.rank:
                return f"output {i} has shape {sa} where a trace of the run gave {sb}"
            if sa.rank is not None and any(x is not None and x != y for x, y in zip(sa.as_list(), sb.as_list(),
                                                                                  strict=True)):
                return f"output {i} has shape {sa} where a trace of the run gave {sb}"
        elif type(a) is not type(b) or (not hasattr(a, "shape") and a != b):
            return f"output {i} is {a!r} where a trace of the run gave {b!r}"
    return None
