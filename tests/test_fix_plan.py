"""The fix plan's pure logic: TF's cache rules on recorded signatures, replay counts, plans on hand-built runs."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from edit_helpers import apply_edits
from tfretrace.fix.core.predict import Config, calls_of, count
from tfretrace.fix.core.rules import covers, fold_all, generalize, literal_key
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.plan import PlanStep, plan_for, render_counts, with_plan
from tfretrace.records.events import BY_TYPE, LITERAL_RULE, KerasInfo, Leaf, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session


def t(path: str, *shape: int | None, dtype: str = "float32") -> Leaf:
    return Leaf(path, "tensor", dtype=dtype, shape=tuple(shape))


def py(path: str, value: object) -> Leaf:
    return Leaf(path, "python", value=repr(value), type_name=type(value).__name__)


def report(
    signatures: list[tuple[Leaf, ...]],
    *,
    location: str = "train.py:3",
    name: str = "step",
    sites: list[str] | None = None,
    objects: list[int] | None = None,
    keras: KerasInfo | None = None,
) -> FunctionReport:
    events = []
    for number, signature in enumerate(signatures, 1):
        events.append(
            TraceEvent(
                index=number,
                cause="first-trace" if number == 1 else "shape-changed",
                seconds=0.1,
                time=float(number),
                call_site=(sites or ["train.py:10"])[min(number - 1, len(sites or [1]) - 1)],
                signature=signature,
                object_index=(objects or [1] * len(signatures))[number - 1],
                keras=keras,
            )
        )
    return FunctionReport(
        name=name,
        location=location,
        calls=len(events),
        traces=len(events),
        trace_seconds=0.1 * len(events),
        objects=len(set(objects or [1])),
        events=tuple(events),
        keras=keras,
    )


# -- TensorFlow's rules ------------------------------------------------------------------------


def test_subtyping_follows_tensorspec_and_literal_rules() -> None:
    assert covers((t("x", None, 10),), (t("x", 7, 10),))
    assert not covers((t("x", 7, 10),), (t("x", None, 10),))
    assert covers((Leaf("x", "tensor", dtype="float32", shape=None),), (t("x", 1, 2, 3),))
    assert not covers((t("x", None),), (t("x", 3, dtype="float64"),))
    assert not covers((t("x", None),), (t("x", 3, 1),))
    # Literal equality is Python's: 1 == 1.0 == True share one trace.
    assert literal_key(py("n", 1)) == literal_key(py("n", True)) == literal_key(py("n", 1.0))
    assert covers((py("n", 1),), (py("n", True),))
    assert not covers((py("n", 1),), (py("n", 2),))
    assert covers((py("n", float("nan")),), (py("n", float("nan")),))  # TF matches NaNs


def typed(path: str, value: object) -> Leaf:
    """A Python leaf as TF 2.23 records it: its Literal matches one type and sign only."""
    return Leaf(path, "python", value=repr(value), type_name=type(value).__name__, extra=((LITERAL_RULE, BY_TYPE),))


def test_literals_recorded_on_tf_2_23_replay_by_type_and_sign() -> None:
    assert not covers((typed("n", 1),), (typed("n", True),))
    assert not covers((typed("n", 1),), (typed("n", 1.0),))
    assert not covers((typed("n", 0.0),), (typed("n", -0.0),))
    assert covers((typed("n", 2.5),), (typed("n", 2.5),))
    # f(1), f(1.0), f(True): one trace up to TF 2.21, three from 2.23; the replay agrees with each.
    calls = [(py("n", 1),), (py("n", 1.0),), (py("n", True),)]
    assert count(calls_of(report(calls)), Config()) == 1
    typed_calls = [(typed("n", 1),), (typed("n", 1.0),), (typed("n", True),)]
    assert count(calls_of(report(typed_calls)), Config()) == 3


def test_reduce_retracing_folds_with_every_cached_trace_that_allows_it() -> None:
    # TF 2.21 measured: shapes 3, 4 with ints 1, 2, then 5 with 2, 6 with 1 -> 4 traces.
    calls = [(t("x", 3), py("n", 1)), (t("x", 4), py("n", 2)), (t("x", 5), py("n", 2)), (t("x", 6), py("n", 1))]
    assert count(calls_of(report(calls)), Config(reduce_retracing=True)) == 4
    assert count(calls_of(report(calls)), Config()) == 4
    assert generalize((t("x", 5), py("n", 2)), [(t("x", 3), py("n", 1)), (t("x", 4), py("n", 2))]) == (
        t("x", None),
        py("n", 2),
    )
    # A rank change generalizes to unknown rank; later shapes of any rank hit.
    shapes = [(t("x", 3),), (t("x", 4),), (t("x", 5),), (t("x", 3, 2),), (t("x", 2, 2, 2),)]
    assert count(calls_of(report(shapes)), Config(reduce_retracing=True)) == 3


def test_partial_last_batch_is_two_traces_with_or_without_reduce_retracing() -> None:
    calls = [(t("x", 32, 10),), (t("x", 8, 10),)]
    assert count(calls_of(report(calls)), Config()) == 2
    assert count(calls_of(report(calls)), Config(reduce_retracing=True)) == 2


def test_an_input_signature_that_misses_a_call_is_refused() -> None:
    calls = calls_of(report([(t("x", 32, 10),), (t("x", 8, 11),)]))
    assert count(calls, Config(input_signature=(t("x", None, 10),))) is None
    general = fold_all([c.signature for c in calls.calls])
    assert general == (t("x", None, None),)
    assert count(calls, Config(input_signature=general)) == 1


# -- plans on hand-built runs with real source files ---------------------------------------------

SHAPES = """import tensorflow as tf


@tf.function(jit_compile=False)
def step(x, lr):
    return x * lr


for n in range(5, 9):
    step(tf.ones([4, n]), 0.1 * n)
"""


def test_plan_declares_once_where_one_signature_covers_the_number_too(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SHAPES)
    sigs = [(t("x", 4, n), py("lr", 0.1 * n)) for n in (5, 5, 6, 7)]
    sigs[1] = (t("x", 4, 5), py("lr", 0.9))
    rep = report(sigs, location=f"{path}:4", sites=[f"{path}:10"])
    steps = plan_for(rep, SourceReader())
    assert render_counts(steps) == "4 traces -> 4 with tfretrace fix --apply (-> 1 with --unsafe-fixes)"
    # One declaration covers lr too (a scalar spec) and reaches 1, as passing lr as a tensor at the
    # call site and then declaring would: the plan makes the one edit, not two.
    assert [(s.by, s.kind, s.safety) for s in steps] == [("tfretrace", "input-signature", "unsafe")]
    assert steps[0].unsafe_reason and steps[-1].final
    assert steps[-1].cause == "shape-changed"
    # The final declaration keeps the user's keyword and opens exactly dim 1.
    assert steps[-1].code is not None and "jit_compile=False" in steps[-1].code
    # dim 1 varied; dim 0 is a batch dimension: open though it was 4 in every call, and said so.
    assert "tf.TensorSpec(shape=[None, None], dtype=tf.float32)" in steps[-1].code
    assert "tf.TensorSpec(shape=[], dtype=tf.float32)" in steps[-1].code
    assert steps[-1].pinned is not None and "x dim 0" in steps[-1].pinned
    edited = apply_edits(path.read_text(), [e for s in steps for e in s.edits])
    ast.parse(edited)
    assert "step(tf.ones([4, n]), 0.1 * n)" in edited  # the call sites stay as they were
    assert "@tf.function(jit_compile=False, input_signature=[" in edited
    assert steps[0].seconds_saved == pytest.approx(0.3)


def test_a_replay_that_does_not_reproduce_the_run_predicts_nothing() -> None:
    # Two traces of an identical signature on one object cannot happen under TF's rules.
    rep = report([(t("x", 3),), (t("x", 3),)])
    steps = plan_for(rep, SourceReader())
    assert [s.kind for s in steps] == ["statement"]
    assert steps[0].traces_after == steps[0].traces_before


PARTIAL = """import tensorflow as tf

ds = tf.data.Dataset.range(100).map(lambda i: tf.ones([10])).batch(32)


@tf.function
def step(x):
    return tf.reduce_sum(x)


def run():
    @tf.function
    def inner(x):
        return x + scale

    scale = 2.0
    for x in ds:
        step(x)
        inner(x)
"""


def test_a_partial_last_batch_gets_a_signature_that_keeps_every_example(tmp_path: Path) -> None:
    # drop_remainder would remove the trace too, but it skips the last 4 examples of every epoch:
    # an input_signature open in the batch dimension removes as many traces and computes the same.
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    rep = report([(t("x", 32, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18"])
    steps = plan_for(rep, SourceReader())
    assert [(s.kind, s.by, s.traces_after) for s in steps] == [("input-signature", "tfretrace", 1)]
    assert "tf.TensorSpec(shape=[None, 10], dtype=tf.float32)" in steps[0].code


def test_partial_last_batch_gets_drop_remainder_where_the_body_reads_the_batch_size(tmp_path: Path) -> None:
    # x.shape[0] as a Python number keeps dim 0 pinned: no signature covers the last batch.
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL.replace("return tf.reduce_sum(x)", "return tf.reduce_sum(x) / x.shape[0]"))
    rep = report([(t("x", 32, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18"])
    steps = plan_for(rep, SourceReader())
    assert [s.kind for s in steps] == ["drop-remainder"]
    assert steps[0].traces_after == 1
    assert "batch(32, drop_remainder=True)" in apply_edits(path.read_text(), list(steps[0].edits))


def test_each_applied_step_says_what_it_changes_in_the_results(tmp_path: Path) -> None:
    # The field, not the words: drop_remainder skips examples; a body drawing random numbers draws
    # others once the partial batch no longer has a trace (and a random op) of its own; a signature
    # open in dim 0 runs shape-generic kernels, which may move the last digits (issue 33, item 4c).
    path = tmp_path / "loop.py"
    rep = report([(t("x", 32, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18"])
    path.write_text(PARTIAL)
    assert [s.changes for s in plan_for(rep, SourceReader())] == ["float-last-digits"]
    path.write_text(PARTIAL.replace("return tf.reduce_sum(x)", "return tf.reduce_sum(x) / x.shape[0]"))
    assert [s.changes for s in plan_for(rep, SourceReader())] == ["examples"]
    for draw, said in [("tf.random.normal([3])", "random-stream"),
                       ("tf.random.stateless_normal([3], [1, 2])", "float-last-digits")]:
        path.write_text(PARTIAL.replace("return tf.reduce_sum(x)", f"return tf.reduce_sum(x) + {draw}"))
        steps = plan_for(rep, SourceReader())
        assert [(s.kind, s.changes) for s in steps] == [("input-signature", said)]
        assert PlanStep.from_dict(steps[0].to_dict()).changes == said



def test_a_signature_on_a_function_written_into_a_saved_model_says_it_adds_serving_default(tmp_path: Path) -> None:
    # tf.saved_model.save without signatures= exports the one function with an input_signature
    # as serving_default: declaring it changes what the SavedModel serves.
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    rep = report([(t("x", 32, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18"])
    saved = replace(rep.events[0], index=3, cause="saved-model-export", time=3.0)
    rep = replace(rep, events=(*rep.events, saved), traces=3)
    steps = plan_for(rep, SourceReader())
    assert [(s.kind, s.changes) for s in steps] == [("input-signature", "saved-model-signature")]
    assert PlanStep.from_dict(steps[0].to_dict()).changes == "saved-model-signature"
    # a body that also draws random numbers: the field keeps that change of results
    path.write_text(PARTIAL.replace("return tf.reduce_sum(x)", "return tf.reduce_sum(x) + tf.random.normal([3])"))
    assert [s.changes for s in plan_for(rep, SourceReader())] == ["random-stream"]


TWO_DATASETS = """import tensorflow as tf

batch_size = 32
train_dataset = tf.data.Dataset.range(200).map(lambda i: tf.ones([8]))
train_dataset = train_dataset.shuffle(buffer_size=64).batch(batch_size)
val_dataset = tf.data.Dataset.range(50).map(lambda i: tf.ones([8])).batch(batch_size)


@tf.function
def train_step(x):
    return tf.reduce_sum(x) / x.shape[0]


for epoch in range(2):
    for step, x_batch_train in enumerate(train_dataset):
        train_step(x_batch_train)
    for x_batch_val in val_dataset:
        print(x_batch_val.shape)
"""


def test_drop_remainder_edits_the_dataset_the_loop_iterates(tmp_path: Path) -> None:
    # Two datasets batched with one size variable: the training loop's batch() is edited, the
    # validation dataset (whose examples must all be scored) is left alone.
    path = tmp_path / "loop.py"
    path.write_text(TWO_DATASETS)
    rep = report([(t("x", 32, 8),), (t("x", 8, 8),)], location=f"{path}:9", name="train_step", sites=[f"{path}:16"])
    (step,) = plan_for(rep, SourceReader())
    edited = apply_edits(TWO_DATASETS, list(step.edits))
    assert step.kind == "drop-remainder"
    assert "train_dataset.shuffle(buffer_size=64).batch(batch_size, drop_remainder=True)" in edited
    assert "map(lambda i: tf.ones([8])).batch(batch_size)\n" in edited
    assert [edit.span.line for edit in step.edits] == [5]


def test_def_in_a_function_with_a_partial_batch_ranks_moving_the_def_first(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    sigs, objects = [], []
    for obj in range(1, 6):
        sigs += [(t("x", 32, 10),), (t("x", 4, 10),)]
        objects += [obj, obj]
    rep = report(sigs, location=f"{path}:12", name="run.<locals>.inner", sites=[f"{path}:19"], objects=objects)
    # As the monitor labels them: each new object's first trace is new-function-object.
    rep = replace(rep, events=tuple(
        replace(e, cause="new-function-object") if e.index > 1 and e.index % 2 == 1 else e for e in rep.events
    ))
    planned = with_plan(rep, SourceReader())
    steps = [PlanStep.from_dict(s) for s in planned.plan]
    # tfretrace's own edit first (a signature keeping every example: 10 -> 5), then moving the def by
    # hand (5 -> 1).
    assert [(s.kind, s.by, s.traces_before, s.traces_after) for s in steps if s.kind != "statement"] == [
        ("input-signature", "tfretrace", 10, 5),
        ("advice", "hand", 5, 1),
    ]
    assert steps[1].cause == "new-function-object"
    assert "scale" in steps[1].summary  # what it closes over
    assert planned.main_cause == "new-function-object"
    assert steps[-1].traces_after == 1


def test_variables_of_two_list_lengths_are_an_honest_statement() -> None:
    def var(path: str) -> Leaf:
        return Leaf(path, "variable", dtype="float32", shape=(3,), extra=(("alias_id", "0"), ("trainable", "True")))

    two = (Leaf("vs", "list", value="of len 2", type_name="list"), var("vs[0]"), var("vs[1]"))
    three = (Leaf("vs", "list", value="of len 3", type_name="list"), var("vs[0]"), var("vs[1]"), var("vs[2]"))
    steps = plan_for(report([two, three]), SourceReader())
    assert {s.kind for s in steps} == {"statement"}
    assert "expected" in steps[0].summary and "about 100.0 ms" in steps[0].summary  # what it costs


def test_a_plan_never_advises_reusing_models_its_events_call_distinct() -> None:
    # Model 2's first trace is its own (expected: a trained model, a target network); its later
    # shape change is the retrace to fix. Building "the" model once would merge distinct models.
    keras = KerasInfo("fold1", "Sequential", "predict", "app.py:40")

    def ev(index: int, cause: str, obj: int, rows: int, expected: bool | None = None) -> TraceEvent:
        return TraceEvent(index=index, cause=cause, seconds=0.1, time=float(index), call_site="app.py:50",
                          signature=(t("data", rows, 4),), object_index=obj, keras=keras, expected=expected,
                          note="its own model" if expected else None)

    events = (ev(1, "first-trace", 1, 32), ev(2, "first-trace", 2, 32, True), ev(3, "shape-changed", 2, 16))
    rep = FunctionReport(name="one_step", location="keras/src/backend/tensorflow/trainer.py:219", calls=3,
                         traces=3, trace_seconds=0.3, objects=2, events=events, keras=keras, retrace_count=1)
    steps = plan_for(rep)
    assert [s.cause for s in steps] == ["shape-changed"]
    assert steps[0].traces_before == 3 and steps[0].traces_after == 2
    # A model built again (keras-new-model) is still advised to be built once.
    rebuilt = replace(rep, events=(*events[:1], replace(events[1], cause="keras-new-model", expected=None),
                                   events[2]), retrace_count=2)
    assert "keras-new-model" in [s.cause for s in plan_for(rebuilt)]


def test_keras_predict_pads_every_varying_dimension() -> None:
    keras = KerasInfo("m", "Sequential", "predict")
    sigs = [
        (Leaf("data", "list", value="of len 1", type_name="list"), t("data[0]", n, k, 4)) for n, k in ((32, 5), (16, 9))
    ]
    rep = report(sigs, location="keras/src/backend/tensorflow/trainer.py:264", keras=keras, sites=["app.py:9"])
    steps = plan_for(rep, SourceReader())
    assert steps[0].kind == "keras-pad" and steps[0].traces_after == 1
    assert "rows to a multiple of 32, predict's batch size, dim 1 to 9" in steps[0].summary
    # predict uses reduce_retracing: a third shape would already hit the relaxed (None, None, 4) trace
    # and the recorded run could not have traced it.
    assert all(not e.span.path.startswith("keras") for s in steps for e in s.edits)


def test_the_plan_survives_the_json_round_trip() -> None:
    rep = with_plan(report([(t("x", 4, 5),), (t("x", 4, 6),), (t("x", 4, 7),)]), SourceReader())
    # No source to read: no input_signature can be written, reduce_retracing (3 -> 2) is the step.
    assert [s["kind"] for s in rep.plan] == ["reduce-retracing"]
    session = Session(functions=(rep,), wall_seconds=1.0)
    again = Session.from_dict(session.to_dict())
    assert again.functions[0].plan == rep.plan
    step = PlanStep.from_dict(rep.plan[0])
    assert step.to_dict() == rep.plan[0]


def test_reports_lead_each_function_with_its_plan(tmp_path: Path) -> None:
    from tfretrace.render.html import HtmlRenderer
    from tfretrace.render.text import TextRenderer, render_plans

    path = tmp_path / "train.py"
    path.write_text(SHAPES)
    rep = with_plan(
        report([(t("x", 4, n), py("lr", 0.5)) for n in (5, 6, 7)], location=f"{path}:4", sites=[f"{path}:10"]),
        SourceReader(),
    )
    session = Session(functions=(rep,), wall_seconds=2.0)
    text = TextRenderer(width=200, verbose=True).render(session)
    assert text.index("Fix plan: 3 traces -> 3 with tfretrace fix --apply (-> 1") < text.index("#1 first-trace")
    assert text.count("tf.TensorSpec(shape=[None, None], dtype=tf.float32)") == 1  # shown once, in the plan
    assert "(-> 1 with --unsafe-fixes)" in render_plans(session, width=200)
    html = HtmlRenderer().render(session)
    assert html.index('class="plan"') < html.index('class="events"')


BODIES = """import tensorflow as tf


@tf.function
def score(ids, depth):
    return tf.reduce_sum(tf.constant([ids])) if depth > 1 else 0.0


@tf.function
def step(x, depth):
    for _ in range(depth):
        x = x * 2.0
    return x


score([1, 2], 2)
"""


def test_python_values_the_body_needs_stay_python_values(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(BODIES)

    def ints(n: int) -> tuple[Leaf, ...]:
        return (Leaf("ids", "list", value=f"of len {n}", type_name="list"), *(py(f"ids[{i}]", i) for i in range(n)))

    # A list the body feeds to tf.constant becomes a tensor, and the body says tf.convert_to_tensor
    # (tf.constant refuses a symbolic tensor); depth steers a Python if, so no signature is written.
    lists = report(
        [(*ints(n), py("depth", 2)) for n in (2, 3, 4)], location=f"{path}:4", name="score", sites=[f"{path}:16"]
    )
    steps = plan_for(lists, SourceReader())
    assert [s.kind for s in steps] == ["tensor-argument", "reduce-retracing"]
    assert "tf.convert_to_tensor([ids])" in [e.text for e in steps[0].edits]
    # A constant int that sets a Python loop's length keeps the input_signature from being written.
    shapes = report([(t("x", n), py("depth", 3)) for n in (2, 3, 4)], location=f"{path}:9", name="step")
    assert [s.kind for s in plan_for(shapes, SourceReader())] == ["reduce-retracing"]


def test_a_plan_from_a_bounded_history_says_so() -> None:
    rep = report([(t("x", 4, n),) for n in (5, 6, 7)])
    rep = FunctionReport(**{**rep.__dict__, "dropped_events": 40})
    steps = plan_for(rep, SourceReader())
    assert steps[-1].kind == "statement" and "43" in steps[-1].summary


def test_a_failing_plan_never_breaks_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace.fix.planning import plan as plan_module

    def broken(*args: object) -> FunctionReport:
        raise RuntimeError("boom")

    monkeypatch.setattr(plan_module, "with_plan", broken)
    errors: list[BaseException] = []
    rep = report([(t("x", 3),), (t("x", 4),)])
    out = plan_module.PlanCache().planned((rep,), errors.append)
    assert out == (rep,) and [str(e) for e in errors] == ["boom"]


def test_a_malformed_plan_in_a_loaded_session_is_ignored() -> None:
    rep = report([(t("x", 3),), (t("x", 4),)])
    bad = FunctionReport(**{**rep.__dict__, "plan": ({"cause": "x", "traces_before": "many"}, {"kind": 3})})
    assert bad.main_cause == "shape-changed"
    from tfretrace.render.text import TextRenderer

    assert "Fix plan" not in TextRenderer(verbose=True).render(Session(functions=(bad,), wall_seconds=1.0))


FROM_IMPORT = """from tensorflow import function, ones


@function
def step(x):
    return x


for n in range(3, 6):
    step(ones([n]))
"""


def test_no_edit_names_a_tensorflow_module_the_file_does_not_import(tmp_path: Path) -> None:
    path = tmp_path / "bare.py"
    path.write_text(FROM_IMPORT)
    rep = report([(t("x", n),) for n in (3, 4, 5)], location=f"{path}:4", sites=[f"{path}:10"])
    steps = plan_for(rep, SourceReader())
    assert steps[-1].kind == "input-signature" and steps[-1].edits == ()


def test_long_python_values_that_differ_past_the_cut_are_different_literals() -> None:
    a = Leaf("mode", "python", value="'xxxx...'", type_name="str", extra=(("sha1", "aa"),))
    b = Leaf("mode", "python", value="'xxxx...'", type_name="str", extra=(("sha1", "bb"),))
    assert not covers((a,), (b,)) and covers((a,), (a,))


def test_an_open_signature_under_jit_compile_says_xla_still_compiles_per_shape(tmp_path: Path) -> None:
    path = tmp_path / "xla.py"
    path.write_text(SHAPES.replace("jit_compile=False", "jit_compile=True"))
    rep = report([(t("x", 4, n), py("lr", 0.5)) for n in (5, 6, 7)], location=f"{path}:4", sites=[f"{path}:10"])
    steps = plan_for(rep, SourceReader())
    assert steps[-1].kind == "input-signature" and "XLA still compiles" in steps[-1].summary


def test_several_smaller_batch_sizes_are_not_a_remainder(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    rep = report([(t("x", 32, 10),), (t("x", 20, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18"])
    assert "drop-remainder" not in [s.kind for s in plan_for(rep, SourceReader())]


def test_the_fast_cache_index_answers_like_the_subtyping_rules() -> None:
    import random

    from tfretrace.fix.core.predict import _Table

    rng = random.Random(7)
    dims = [None, 2, 3]

    def sig() -> tuple[Leaf, ...]:
        rank = rng.choice([None, 1, 2])
        shape = None if rank is None else tuple(rng.choice(dims) for _ in range(rank))
        return (
            Leaf("x", "tensor", dtype=rng.choice(["float32", "int32"]), shape=shape),
            py("n", rng.choice([1, 1.0, True, 2])),
            Leaf("o", "object", type_name="C", ident=rng.choice([1, 2, None]), alive=rng.choice([True, False])),
        )

    for _ in range(300):
        traces = [sig() for _ in range(rng.randint(0, 5))]
        table = _Table()
        for trace in traces:
            table.add(trace)
        call = sig()
        assert table.serves(call) == any(covers(trace, call) for trace in traces)
        # reduce_retracing's fold over only the alike traces is the fold over all of them.
        assert generalize(call, table.alike(call)) == generalize(call, traces)


def test_a_step_the_unsafe_phase_took_after_an_unsafe_step_is_unsafe_too() -> None:
    # A cast (unsafe) then a signature TensorFlow checked: the signature's count assumes the cast, so
    # --apply must not write it alone (it declared int64 where the program still passed int32).
    from tfretrace.fix.core.source import Replacement, Span
    from tfretrace.fix.planning.safety_plan import after_unsafe
    from tfretrace.fix.planning.step import PlanStep

    edit = (Replacement(Span("p.py", 1, 0, 1, 1), "x"),)

    def step(kind: str, safety: str, before: int, after: int) -> PlanStep:
        return PlanStep("python-value-changed", kind, kind, None, edit, before, after, 0.0, safety=safety)

    plan = [step("tensor-argument", "safe", 6, 2), step("cast-dtype", "unsafe", 2, 2),
            step("input-signature", "safe", 2, 1)]
    made = after_unsafe(plan)
    assert [(s.kind, s.tier) for s in made] == [("tensor-argument", 0), ("cast-dtype", 1), ("input-signature", 1)]
    assert made[2].unsafe_reason is not None and "cast-dtype" in made[2].unsafe_reason
    assert after_unsafe(plan[:1]) == plan[:1]
