"""The stateful random ops in a trace's graph: what a function draws, read from TensorFlow, never from source.

Each trace holds its own stateful random op (``RandomStandardNormal`` behind ``tf.random.normal``, the
``RandomUniform`` of ``tf.nn.dropout``), with its own stream: a fix that removes traces makes later calls
draw other numbers. The draw is often in code the traced def calls (a Keras layer, a helper), which its
source does not show. Read when a trace is made (hooks) and, for a live function, from its traces (probe).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Operations read per graph at most (its own and those of the functions it holds): a draw is found early.
_MAX_NODES = 20000


def graph_draws(graph: Any) -> Iterator[tuple[str, bool]]:
    """Each stateful random op in ``graph`` (nested functions included), and whether it had a seed.

    A stateful random op keeps the seeds it was traced with (``seed``/``seed2``), both 0 only where
    neither ``tf.random.set_seed`` nor an op seed was set. Stateless ops, and a ``tf.random.Generator``
    or a Keras 3 ``SeedGenerator`` (their state lives in a variable, outside the traces), are not such ops.
    """
    from tensorflow.python.framework import op_def_registry

    nodes = [(op.type, op.node_def.attr) for op in graph.get_operations()[:_MAX_NODES]]
    for inner in getattr(graph, "_functions", {}).values():
        definition = getattr(inner, "definition", None)
        if definition is not None:
            nodes.extend((node.op, node.attr) for node in definition.node_def[:_MAX_NODES])
    for kind, attrs in nodes:
        op_def = op_def_registry.get(kind)
        if op_def is not None and op_def.is_stateful and "seed" in attrs and "seed2" in attrs:
            yield kind, bool(attrs["seed"].i or attrs["seed2"].i)


def trace_draw(concrete: Any) -> str | None:
    """The first stateful random op a finished trace draws from, or None (never raises: it runs in a trace)."""
    try:
        return next((kind for kind, _seeded in graph_draws(concrete.graph)), None)
    except Exception:  # a graph this reading does not know: nothing said, as before
        return None
