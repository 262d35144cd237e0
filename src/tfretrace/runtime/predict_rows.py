"""Keras ``predict`` rows settled before planning: live models asked after the run, one line's models judged together.

Each predict trace carries a verdict read from the model while it ran (``KerasInfo.rows``: whether
padding its rows keeps every kept row's prediction; fix kind keras-pad-rows). What only the
whole run can say is settled here, on the reports, so a saved session carries them to ``fix``:

- once the program has finished, the live models of each predict row that retraced are run again
  on the rows they were given, padded and not (``tfretrace._tf.keras_live``); their answer replaces the verdict
  read from the layers (a custom layer whose rows are independent is then padded; one that mixes
  rows is not, whatever its layers' names say);
- a line where several models predicted (``for model in models: model.predict(x)``) is one edit for
  all of them: each model's verdict there is the first reason any of them gives;
- where ``model.predict(x)`` could become ``model(x, training=False).numpy()`` (fix kind keras-call), the
  live models run both on inputs of the recorded shapes (``tfretrace._tf.keras_call_check``), and each
  event's ``KerasInfo.call`` says whether they agreed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tfretrace.records.events import CALL_DIGITS, CALL_SAME, TENSOR, TraceEvent
from tfretrace.records.function_report import FunctionReport

ROWS_INDEPENDENT = "independent"  # tfretrace._tf.keras_rows' verdict, as the session stores it


def settle_rows(
    functions: Sequence[FunctionReport], models: Sequence[Any], *, live: bool
) -> tuple[FunctionReport, ...]:
    """The reports with their predict verdicts settled; ``models[i]`` are the live models of ``functions[i]``
    (asked only where ``live``: after the program, where the probe may run the program's code)."""
    found = [_asked(fn, kept) if live else fn for fn, kept in zip(functions, models, strict=True)]
    return _one_line(_one_call_line(found))


def _predicts(fn: FunctionReport) -> bool:
    return fn.keras is not None and fn.keras.method == "predict"


def _asked(fn: FunctionReport, models: Any) -> FunctionReport:
    if not _predicts(fn) or fn.retraces == 0:
        return fn  # no plan to check: the model is not run again (a new batch shape would trace it)
    return _call_asked(_rows_asked(fn, models), models)


def _call_asked(fn: FunctionReport, models: Any) -> FunctionReport:
    """Each event told whether the live models' predict and call agree (fix kind keras-call), where it could be made."""
    shapes = _batch_shapes(fn)
    kept = list(models)
    if shapes is None or not kept:
        return fn
    from tfretrace._tf.keras_call_check import check_call

    said = [check_call(model, shapes) for model in kept]
    agreed = (CALL_SAME, CALL_DIGITS)
    differs = next((verdict for verdict, _n in said if verdict not in agreed), None)
    verdict = differs or (CALL_DIGITS if any(v == CALL_DIGITS for v, _n in said) else CALL_SAME)
    inputs = None if differs is not None else min(n for _v, n in said)
    events = tuple(
        replace(event, keras=replace(event.keras, call=verdict, call_inputs=inputs)) if event.keras is not None
        else event
        for event in fn.events
    )
    return replace(fn, events=events)


def _one_call_line(functions: list[FunctionReport]) -> list[FunctionReport]:
    """A line where several predict rows were recorded is one keras-call edit for all of them: where one row there
    did not agree (or was not asked), every row's ``call`` there says so, or the edit would change its model too."""
    rows: dict[str, list[int]] = {}
    for i, fn in enumerate(functions):
        for event in fn.events if _predicts(fn) else ():
            if event.call_site is not None and event.keras is not None and i not in rows.get(event.call_site, []):
                rows.setdefault(event.call_site, []).append(i)
    agreed = (CALL_SAME, CALL_DIGITS)
    reasons: dict[str, str] = {}
    for site, found in rows.items():
        said = [(functions[i], e.keras.call) for i in found for e in functions[i].events
                if e.call_site == site and e.keras is not None]
        if len(found) < 2 or not any(v in agreed for _fn, v in said):
            continue  # one row, or none asked: each row's own answer stands
        other = next(((fn, v) for fn, v in said if v not in agreed), None)
        if other is not None:
            reasons[site] = f"{other[0].display_name()} also predicts at {site}: " + (
                other[1] or "it was not run both ways")
    if not reasons:
        return functions

    def told(event: TraceEvent) -> TraceEvent:
        if event.keras is None or event.call_site not in reasons or event.keras.call not in agreed:
            return event
        return replace(event, keras=replace(event.keras, call=reasons[event.call_site], call_inputs=None))

    return [replace(fn, events=tuple(told(e) for e in fn.events)) if _predicts(fn) else fn for fn in functions]


def _batch_shapes(fn: FunctionReport) -> list[tuple[tuple[int, ...], str]] | None:
    """The recorded batches' shapes and dtypes where the call could replace predict (keras-call's maker reads the
    same: one tensor per call, every trace at predict's first batch); None where it could not."""
    found: list[tuple[tuple[int, ...], str]] = []
    for event in fn.events:
        if event.keras is None or (event.keras.step or 0) > 0:
            return None
        tensors = [leaf for leaf in event.signature if leaf.kind == TENSOR]
        if len(tensors) != 1 or tensors[0].shape is None or tensors[0].dtype is None:
            return None
        shape = tensors[0].shape
        if not shape or any(d is None for d in shape):
            return None
        key = (tuple(int(d) for d in shape if d is not None), tensors[0].dtype)
        if key not in found:
            found.append(key)
    return found


def _rows_asked(fn: FunctionReport, models: Any) -> FunctionReport:
    from tfretrace._tf.keras_live import check_rows

    said = [check_rows(model) for model in list(models)]
    if not said or any(verdict is None for verdict in said):
        return fn  # a live model with no partial batch kept: the verdict read from the layers stands
    verdict = next((v for v in said if v != ROWS_INDEPENDENT), ROWS_INDEPENDENT)
    return _with_rows(fn, lambda event: verdict if event.keras is not None and event.keras.rows is not None else None)


def _one_line(functions: list[FunctionReport]) -> tuple[FunctionReport, ...]:
    """Every predict verdict at a line shared with another model's predict is the line's first reason."""
    reasons: dict[str, str] = {}
    models: dict[str, set[int]] = {}
    for i, fn in enumerate(functions):
        if not _predicts(fn):
            continue
        for event in fn.events:
            if event.call_site is None or event.keras is None:
                continue
            models.setdefault(event.call_site, set()).add(i)
            rows = event.keras.rows
            if rows != ROWS_INDEPENDENT and event.call_site not in reasons:
                reasons[event.call_site] = f"{fn.display_name()} also predicts at {event.call_site}: " + (
                    rows or "its rows were not read")

    def rows_at(event: TraceEvent) -> str | None:
        site = event.call_site
        assert event.keras is not None
        if site is None or len(models.get(site, ())) < 2 or site not in reasons or event.keras.rows is None:
            return event.keras.rows
        return event.keras.rows if event.keras.rows != ROWS_INDEPENDENT else reasons[site]

    return tuple(_with_rows(fn, rows_at) if _predicts(fn) else fn for fn in functions)


def _with_rows(fn: FunctionReport, rows: Any) -> FunctionReport:
    events = tuple(
        replace(event, keras=replace(event.keras, rows=rows(event))) if event.keras is not None else event
        for event in fn.events
    )
    return replace(fn, events=events)
