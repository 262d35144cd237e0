"""Find Keras' own tf.functions by model and role (train, test, predict), whatever a Keras version
calls them: Keras 3 builds one_step_on_data/multi_step_on_iterator closures, Keras 2 (TF 2.15's
keras, tf_keras) makes model.train_function itself the tf.function. Tests use these instead of
hard-coding one version's qualified names."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from tfretrace._tf.keras import KERAS_ROLES as ROLES  # Keras method -> train, test or predict
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session


def keras_version(keras: Any) -> tuple[int, int]:
    """(major, minor) of a Keras namespace (tf.keras, keras, tf_keras).

    TF 2.15's tf.keras namespace has no __version__: ask the package its Model comes from.
    """
    package = sys.modules[keras.Model.__module__.split(".")[0]]
    major, minor = str(getattr(package, "__version__", "0.0")).split(".")[:2]
    return int(major), int(minor)


def is_keras2(keras: Any) -> bool:
    """Whether this Keras namespace is Keras 2 (TF 2.15's keras, tf_keras)."""
    return keras_version(keras)[0] == 2


def input_path(keras: Any) -> str:
    """The argument path under which a Keras step function sees the model's inputs.

    Keras 3 passes the batch (``data``, a tuple: inputs at ``data[0]``); Keras 2 passes the
    dataset iterator, whose element spec is the batch.
    """
    return "iterator.element_spec" if is_keras2(keras) else "data[0]"


def role_of(report: FunctionReport) -> str | None:
    """train, test or predict for a Keras function's row; None for user functions."""
    methods = {e.keras.method for e in report.events if e.keras is not None}
    if report.keras is not None:
        methods.add(report.keras.method)
    roles = {ROLES.get(m) for m in methods} - {None}
    return roles.pop() if len(roles) == 1 else None


def keras_rows(session: Session, role: str, model: str | None = None) -> list[FunctionReport]:
    """The rows of Keras' functions in this role (of this model, if given), in session order."""
    return [
        f
        for f in session.functions
        if role_of(f) == role and (model is None or model in f.keras_models())
    ]


def keras_row(session: Session, role: str, model: str | None = None) -> FunctionReport:
    """The one row of Keras' functions in this role (of this model); fails if there are several."""
    rows = keras_rows(session, role, model)
    assert len(rows) == 1, [(r.name, r.keras_models()) for r in rows]
    return rows[0]


def short_name(report: FunctionReport) -> str:
    """The function's own name, the last part of its qualified name."""
    return report.name.rsplit(".", 1)[-1]


def tf_functions(model: Any, role: str) -> dict[str, Any]:
    """The tf.function objects reachable from ``model.<role>_function``, by their own name.

    Keras 2's functions are tf.functions; Keras 3's are a tf.function or a plain closure whose
    closure cells (possibly behind functools.wraps) hold the step tf.functions, nested one or two
    levels deep depending on the release. Walking the closures finds them all without names.
    """
    found: dict[str, Any] = {}
    seen: set[int] = set()

    def visit(value: Any, depth: int) -> None:
        if value is None or depth > 8 or id(value) in seen:
            return
        seen.add(id(value))
        if hasattr(value, "experimental_get_tracing_count"):
            found[value.__name__] = value
            visit(getattr(value, "python_function", None), depth + 1)
            return
        visit(getattr(value, "__wrapped__", None), depth + 1)
        for cell in getattr(value, "__closure__", None) or ():
            try:
                visit(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                continue

    visit(getattr(model, f"{role}_function"), 0)
    return found


def tf_counts(model: Any, role: str) -> dict[str, int]:
    """TensorFlow's own trace count of each tf.function behind ``model.<role>_function`` that traced."""
    counts = {name: f.experimental_get_tracing_count() for name, f in tf_functions(model, role).items()}
    return {name: count for name, count in counts.items() if count > 0}


def batch_step(report: FunctionReport) -> FunctionReport:
    """The row with only the traces of Keras' step that receives the batch.

    Keras 3.4 to 3.6 run train_on_batch through an iterator step called with a new Python
    generator each time (a real retrace per call: TensorFlow counts it too), with the batch step
    traced inside it and folded into the same row. Elsewhere every trace of the row is the batch
    step's, and this returns the row's events unchanged.
    """
    events = tuple(
        e for e in report.events if not any(leaf.path == "iterator" and leaf.kind == "object" for leaf in e.signature)
    )
    return dataclasses.replace(report, events=events)


def iterator_per_call(report: FunctionReport) -> bool:
    """Whether this row holds Keras 3.4-3.6's per-call iterator step (see batch_step)."""
    return len(batch_step(report).events) < len(report.events)
