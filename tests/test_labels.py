"""Labels follow the evidence (#40 item 6): each label agrees with the records and steps beside it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import sessions as S
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.xla_fixes import xla_steps
from tfretrace.lint.findings import Finding, Report
from tfretrace.lint.observed import mark
from tfretrace.records.events import Change
from tfretrace.records.function_report import FunctionReport
from tfretrace.render import _model
from tfretrace.render.html import HtmlRenderer


def _step(cause: str, before: int, after: int, **fields: object) -> dict[str, object]:
    return {"cause": cause, "kind": "input-signature", "summary": "s", "code": "c", "edits": [],
            "traces_before": before, "traces_after": after, "seconds_saved": 0.1, **fields}


def _structure_changed_twice() -> FunctionReport:
    events = [S.event(1, "first-trace", time=0.1, calls_total=1)]
    for i in (2, 3):
        change = Change("token_ids", "structure", "list of len 3", f"list of len {i + 1}", "")
        events.append(S.event(i, "structure-changed", time=0.1 * i, calls_total=i, changes=(change,)))
    # The plan's biggest step is for the shape the first step's tensor will have, not for a cause seen.
    plan = (_step("structure-changed", 3, 3), _step("shape-changed", 3, 1))
    return FunctionReport(name="score", location="demo.py:66", calls=3, traces=3, trace_seconds=0.3,
                          objects=1, events=tuple(events), plan=plan)


def test_a_functions_cause_is_one_its_retraces_had() -> None:
    report = _structure_changed_twice()
    assert report.main_cause == "structure-changed"
    assert S.session(report).summary()[0].main_cause == "structure-changed"


def test_the_xla_headline_gives_each_alternative_its_own_count() -> None:
    plan = [
        _step("xla-recompile", 1, 1, kind="xla-bucket", compiles_before=4, compiles_after=2, seconds_saved=0.7),
        _step("xla-recompile", 1, 1, kind="xla-off", compiles_before=4, compiles_after=0, seconds_saved=1.4),
    ]
    from tfretrace.fix.planning.step import plan_steps  # the steps as the planner reads them (on main too)

    steps = plan_steps(replace(S.xla_only(), plan=tuple(plan)))
    headline = _model.plan_headline(steps)
    # Every count the headline gives is one of a step's, each step's joined by "or".
    assert "-> 2 with step 1 or -> 0 with step 2" in headline
    assert headline.startswith("Fix plan: 4 XLA compiles")


def test_the_html_does_not_call_xla_recompiles_traced_as_expected() -> None:
    page = HtmlRenderer().render(S.session(S.xla_only()))
    assert "Traced only as expected." not in page
    assert 'class="recompile-line"' in page
    healthy = HtmlRenderer().render(S.session(S.healthy()))
    assert "Traced only as expected." in healthy


def test_a_lint_finding_is_confirmed_only_by_retraces_of_its_rules_cause(tmp_path: Path) -> None:
    source = tmp_path / "train.py"
    source.write_text("\n" * 50, encoding="utf-8")
    events = [S.event(1, "first-trace", time=0.1, calls_total=1)]
    # 21 shape retraces of `tokens` and 2 value retraces of `lr`, all at one call site.
    for i in range(2, 25):
        cause = "python-value-changed" if i in (10, 20) else "shape-changed"
        events.append(replace(S.event(i, cause, time=0.1 * i, calls_total=i), call_site=f"{source}:41"))
    report = FunctionReport(name="train_step", location=f"{source}:12", calls=24, traces=24, trace_seconds=1.0,
                            objects=1, events=tuple(events))
    lint = Report(findings=[Finding(str(source), 41, 0, "TFR106", "Python number 'lr' ...")])
    missed = mark(lint, S.session(report, root=str(tmp_path)), [str(tmp_path)])
    observed = lint.findings[0].observed
    assert observed is not None and observed.retraces == 2
    # The shape retraces at that line are ones no rule predicted.
    assert [(s.line, s.retraces, s.causes) for s in missed] == [(41, 21, ["shape-changed"])]


def test_the_xla_off_advice_keeps_the_decorators_other_arguments(tmp_path: Path) -> None:
    (tmp_path / "serve.py").write_text(
        "import tensorflow as tf\n\n"
        "@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, None], tf.int32)])\n"
        "def predict_batch(x):\n    return x\n",
        encoding="utf-8",
    )
    report = replace(S.xla_only(), location="serve.py:3")
    off = [s for s in xla_steps(report, SourceReader(tmp_path)) if s.kind == "xla-off"]
    assert [s.code for s in off] == [
        "@tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)], jit_compile=False)"
    ]


def test_the_line_that_reads_predict_function_is_code_not_the_docstring(tmp_path: Path) -> None:
    from tfretrace.fix.planning.plan import plan_for
    from tfretrace.records.events import KerasInfo

    keras = KerasInfo("model", "Sequential", "predict")
    docstring = '"""Keras builds predict_function with reduce_retracing=True."""\n'
    loop = "import numpy as np\nfor n in (3, 5):\n    out = model.predict(np.zeros((n, 4)), verbose=0)\n"
    path = tmp_path / "prog.py"
    kinds = {}
    for reads in ("", "print(model.predict_function.experimental_get_tracing_count())\n"):
        path.write_text(docstring + loop + reads, encoding="utf-8")
        events = tuple(
            replace(S.event(i, "first-trace" if i == 1 else "shape-changed", time=float(i), calls_total=i,
                            signature=(S.tensor("x", n, 4),), keras=keras), call_site=f"{path}:4")
            for i, n in ((1, 3), (2, 5))
        )
        report = FunctionReport(name="one_step_on_data_distributed",
                                location="keras/src/backend/tensorflow/trainer.py:279", calls=2, traces=2,
                                trace_seconds=0.2, objects=1, events=events, keras=keras)
        kinds[bool(reads)] = {s.kind: s.summary for s in plan_for(report, SourceReader())}
    # The docstring only names the attribute: the call fix is offered.
    assert "keras-call" in kinds[False]
    # Code on line 5 reads it: that line, not the docstring's line 1, is the one named.
    assert "keras-call" not in kinds[True]
    assert f"{path}:5 reads model.predict_function" in kinds[True]["statement"]
