"""Whether a function's traces read variables another tf.function made at its first call (a lazy build)."""

from __future__ import annotations

from typing import Any

from tfretrace._tf.counters import counted_functions

# Said where a signature opens a dimension every recorded call had, on a function whose traces read
# variables built lazily (the planner then writes the signature with those sizes as they were).
BUILT_INSIDE = (
    "not asked with every dimension open: the traces read variables a tf.function made at its first call "
    "(a layer built from its input's shape), and the probe, run once they exist, cannot see that code run"
)


def built_lazily(traces: list[Any], own: tuple[Any, ...]) -> bool:
    """True where a variable the traces capture was made by another tf.function (not one of ``own``) at its first call.

    ``Linear.__call__`` building ``self.w`` from ``x.shape[-1]`` the first time it runs, called inside
    ``Seq.__call__``: the variable belongs to Linear's function, not Seq's, so Seq's record has no
    variable-creation trace; yet Seq's first call, as a fix would write it, runs that build again under
    its signature. TensorFlow keeps, per function object, weak references to the variables its
    first call created (``_created_variables``); the traces' own variables are compared with those.
    A function's own first-call variables are the planner's to weigh (its variable-creation trace).
    """
    captured = {id(v) for trace in traces for v in getattr(trace, "variables", ())}
    if not captured:
        return False
    mine = {id(f) for f in own}
    for function in counted_functions():
        if id(function) in mine:
            continue
        for ref in getattr(function, "_created_variables", None) or ():
            variable = ref() if callable(ref) else ref
            if variable is not None and id(variable) in captured:
                return True
    return False


def opens_fixed(tf: Any, specs: Any, traces: list[Any]) -> bool:
    """True where the signature ``specs`` leaves open a dimension every recorded trace had the same size.

    The traces' inputs are matched by position among their tensor specs; where the counts differ,
    True (it cannot be told which is which).
    """
    wanted = [s for s in tf.nest.flatten(specs) if isinstance(s, tf.TensorSpec)]
    recorded = []
    for trace in traces:
        inputs = getattr(trace, "structured_input_signature", None)
        leaves = [s for s in tf.nest.flatten(inputs) if isinstance(s, tf.TensorSpec)]
        if len(leaves) != len(wanted):
            return True
        recorded.append(leaves)
    for position, spec in enumerate(wanted):
        if spec.shape.rank is None:
            continue
        for dim in range(spec.shape.rank):
            if spec.shape[dim] is not None:
                continue
            sizes = {
                leaves[position].shape[dim] if leaves[position].shape.rank == spec.shape.rank else -1
                for leaves in recorded
            }
            if len(sizes) == 1 and None not in sizes and -1 not in sizes:
                return True
    return False
