"""runtime.predict_rows without TensorFlow: a line where several models predict takes the first reason any gives."""

from __future__ import annotations

from dataclasses import replace

from sessions import event, keras_predict
from tfretrace.records.events import KerasInfo
from tfretrace.records.function_report import FunctionReport
from tfretrace.runtime.predict_rows import ROWS_INDEPENDENT, settle_rows


def _model(name: str, rows: str | None, sites: list[str]) -> FunctionReport:
    info = KerasInfo(name, "Sequential", "predict", f"app.py:{len(name)}", rows=rows)
    events = tuple(
        replace(event(i + 1, "first-trace" if i == 0 else "shape-changed", time=float(i), calls_total=i + 1),
                call_site=site, keras=info)
        for i, site in enumerate(sites)
    )
    return replace(keras_predict(), name=f"keras predict {name}", events=events, keras=info)


def _rows(fn: FunctionReport) -> list[str | None]:
    return [e.keras.rows if e.keras is not None else None for e in fn.events]


def test_a_line_shared_with_a_model_whose_rows_mix_is_not_independent_for_any_model_there() -> None:
    plain = _model("plain", ROWS_INDEPENDENT, ["app.py:9", "app.py:9", "app.py:20"])
    mixing = _model("centred", "layer 'centre' is a Centre, which may combine rows", ["app.py:9", "app.py:9"])
    alone = _model("alone", ROWS_INDEPENDENT, ["app.py:30", "app.py:30"])
    unread = _model("unread", None, ["app.py:40"])
    settled = settle_rows([plain, mixing, alone, unread], [(), (), (), ()], live=False)
    first, second, third, fourth = settled
    # The plain model's traces at the shared line take the centring model's reason; its own line stays.
    assert _rows(first)[2] == ROWS_INDEPENDENT
    assert all(r is not None and r != ROWS_INDEPENDENT for r in _rows(first)[:2])
    assert _rows(second) == _rows(mixing)
    assert _rows(third) == _rows(alone) and _rows(fourth) == [None]
    # Without live models nothing is asked: the same reports where no line is shared.
    assert settle_rows([plain, alone], [(), ()], live=True) == (plain, alone)


def _with_call(fn: FunctionReport, call: str | None) -> FunctionReport:
    events = tuple(replace(e, keras=replace(e.keras, call=call, call_inputs=4 if call == "same" else None))
                   for e in fn.events if e.keras is not None)
    return replace(fn, events=events)


def _calls(fn: FunctionReport) -> list[str | None]:
    return [e.keras.call if e.keras is not None else None for e in fn.events]


def test_a_line_where_another_model_predicts_is_no_safe_call_for_any_model_there() -> None:
    # keras-call rewrites the line: a model whose predict and call agreed shares it with one whose did not.
    agreed = _with_call(_model("plain", ROWS_INDEPENDENT, ["app.py:9", "app.py:20"]), "same")
    listed = _with_call(_model("heads", ROWS_INDEPENDENT, ["app.py:9"]), "predict returned a list of 2 arrays")
    unasked = _with_call(_model("unasked", ROWS_INDEPENDENT, ["app.py:20"]), None)
    alone = _with_call(_model("alone", ROWS_INDEPENDENT, ["app.py:30", "app.py:30"]), "same")
    first, second, third, fourth = settle_rows([agreed, listed, unasked, alone], [(), (), (), ()], live=False)
    # Each of the plain model's lines is shared with a model that did not agree (or was not asked).
    assert all(c is not None and c not in ("same", "float-last-digits") for c in _calls(first))
    assert [e.keras.call_inputs for e in first.events if e.keras is not None] == [None, None]
    assert _calls(second) == _calls(listed) and _calls(third) == [None]
    assert _calls(fourth) == ["same", "same"]  # a line of its own: its answer stands
    # No row asked at a shared line (a plain run): nothing to settle.
    plain = _with_call(agreed, None)
    assert settle_rows([plain, unasked], [(), ()], live=False) == (plain, unasked)
