"""Who makes each plan step (tfretrace or a person), the headline's two counts, and --verify's rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sessions import healthy, keras_predict, session, storm
from test_fix_plan import PARTIAL, report, t
from tfretrace.fix.applying.verify import _compare
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.planning.plan import PlanStep, plan_for, predict_applied
from tfretrace.fix.planning.step import applied_count, render_counts


def _step(kind: str, before: int, after: int, edits: bool, safety: str | None = None) -> PlanStep:
    from tfretrace.fix.core.source import Replacement, Span

    made = (Replacement(Span("a.py", 1, 0, 1, 1), "x"),) if edits else ()
    safety = safety or ("safe" if edits else "advice")
    return PlanStep("shape-changed", kind, "s", None, made, before, after, 0.1, safety=safety)


def test_headline_gives_the_apply_count_then_the_steps_by_hand() -> None:
    steps = (_step("hoist-def", 24, 8, True), _step("neutral-key", 8, 3, True), _step("advice", 3, 1, False))
    assert [s.by for s in steps] == ["tfretrace", "tfretrace", "hand"]
    assert render_counts(steps) == "24 traces -> 3 with tfretrace fix --apply, -> 1 with step 3 by hand"
    assert applied_count(steps) == 3
    assert render_counts(steps[:2]) == "24 traces -> 3 with tfretrace fix --apply"
    # Nothing by tfretrace: --apply leaves the count as it is.
    assert applied_count(steps[2:]) == 3
    # A session saved before the order (a step by hand first): --apply's count is not knowable.
    old = (_step("advice", 24, 8, False), _step("input-signature", 8, 1, True))
    assert applied_count(old) is None and render_counts(old) == "24 traces -> 8 -> 1"


def test_headline_gives_the_safe_count_then_the_unsafe_one() -> None:
    steps = (
        _step("hoist-def", 12, 3, True), _step("input-signature", 3, 1, True, "unsafe"), _step("advice", 1, 1, False)
    )
    assert [s.tier for s in steps] == [0, 1, 2]
    assert render_counts(steps) == "12 traces -> 3 with tfretrace fix --apply (-> 1 with --unsafe-fixes)"
    assert (applied_count(steps), applied_count(steps, unsafe=True)) == (3, 1)
    # No safe step: --apply alone leaves every trace.
    assert render_counts(steps[1:2]) == "3 traces -> 3 with tfretrace fix --apply (-> 1 with --unsafe-fixes)"
    # An unsafe step before a safe one (not an order the planner writes): no count is claimed.
    assert applied_count((steps[1], replace(steps[0], traces_before=1, traces_after=0))) is None


def test_a_saved_step_is_never_safer_than_its_kind_allows() -> None:
    forged = _step("tensor-argument", 3, 1, True, "safe").to_dict()
    loaded = PlanStep.from_dict(forged)
    assert (loaded.safety, loaded.tier) == ("unsafe", 1) and loaded.unsafe_reason
    # Saved before steps had a class: unsafe, never written by --apply alone.
    old = _step("hoist-def", 3, 1, True).to_dict()
    del old["safety"]
    assert PlanStep.from_dict(old).tier == 1
    assert PlanStep.from_dict(_step("hoist-def", 3, 1, True).to_dict()).tier == 0


def test_by_is_saved_and_a_statement_has_none() -> None:
    step = _step("advice", 3, 1, False)
    assert step.to_dict()["by"] == "hand"
    note = replace(step, kind="statement")
    assert "by" not in note.to_dict() and note.by is None
    assert PlanStep.from_dict(_step("input-signature", 3, 1, True).to_dict()).by == "tfretrace"


def test_apply_prediction_is_the_first_count_and_never_counts_a_step_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    sigs, objects = [], []
    for obj in range(1, 6):
        sigs += [(t("x", 32, 10),), (t("x", 4, 10),)]
        objects += [obj, obj]
    rep = report(sigs, location=f"{path}:12", name="run.<locals>.inner", sites=[f"{path}:19"], objects=objects)
    steps = plan_for(rep, SourceReader())
    # The signature is unsafe (no probe said the body traces the same with open dimensions): only
    # --unsafe-fixes makes it.
    assert applied_count(steps) == predict_applied(rep, SourceReader()) == 10
    assert applied_count(steps, unsafe=True) == predict_applied(rep, SourceReader(), unsafe=True) == 5
    assert render_counts(steps).startswith(
        "10 traces -> 10 with tfretrace fix --apply (-> 5 with --unsafe-fixes), -> 1 with step 2 by hand"
    )


def test_verify_never_compares_one_keras_method_with_another(tmp_path: Path) -> None:
    predict = keras_predict()
    train = replace(predict, keras=replace(predict.keras, method="train"), traces=7)  # type: ignore[arg-type]
    after_predict = replace(predict, traces=1, plan=())
    after_train = replace(train, traces=7, plan=())
    outcomes = _compare(session(train, predict), session(after_train, after_predict), tmp_path)
    by_name = {o.name: o.traces_after for o in outcomes}
    assert by_name == {"encoder.train": 7, "encoder.predict": 1}


NEEDS_PYTHON = """import tensorflow as tf

NAMES = ["a", "b", "c", "d"]
table = {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0}


@tf.function
def pick(i):
    return tf.constant(NAMES[i])


@tf.function
def weight(i):
    return tf.constant(table[i])


@tf.function
def label(i):
    return tf.strings.join([f"class {i}"])


for i in range(3):
    pick(i)
    weight(i)
    label(i)
"""


def test_a_body_that_needs_the_python_value_keeps_it_and_says_so(tmp_path: Path) -> None:
    from test_fix_plan import py

    path = tmp_path / "needs.py"
    path.write_text(NEEDS_PYTHON)
    for line, name in ((7, "pick"), (12, "weight"), (17, "label")):
        rep = report([(py("i", n),) for n in range(3)], location=f"{path}:{line}", name=name, sites=[f"{path}:22"])
        steps = plan_for(rep, SourceReader())
        # Indexing a Python list or dict, or formatting a string: no edit, a statement says why.
        assert steps and {(s.kind, s.by, s.edits) for s in steps} == {("statement", None, ())}, name
        assert steps[0].python_use and "i" in steps[0].python_use


MIXED_INT = """\
import tensorflow as tf


@tf.function
def decay(x, epoch, epochs):
    return x * (1 - epoch / epochs)


for epoch in range(3):
    decay(tf.ones([2]), epoch, 3)
"""


def test_an_int_mixed_with_other_operands_is_an_unasked_step_where_tensorflow_was_not_asked(tmp_path: Path) -> None:
    from test_fix_plan import py

    path = tmp_path / "mixed.py"
    path.write_text(MIXED_INT)
    rep = report([(py("epoch", n),) for n in range(3)], location=f"{path}:5", name="decay", sites=[f"{path}:10"])
    steps = [s for s in plan_for(rep, SourceReader()) if s.kind != "statement"]
    # A plain run: whether an int tensor mixes with `epochs` and `x` is TensorFlow's to say. The step is
    # made (float32, the dtype the probe tries last) and unsafe for want of its answer, never "cannot".
    assert [(s.kind, s.safety, s.unasked, s.traces_after) for s in steps] == [("tensor-argument", "unsafe", True, 1)]
    assert steps[0].edits and steps[0].edits[0].text.endswith("dtype=tf.float32)")


def test_rewrite_moves_statements_and_refuses_what_is_not_one() -> None:
    import pytest

    from tfretrace.fix.applying.rewrite import RewriteError, apply_replacements
    from tfretrace.fix.core.source import Replacement, Span

    text = (
        "import x\n\n\ndef outer(xs):\n    @x.function\n    def inner(a):\n        return a\n\n    return inner(xs)\n"
    )
    moved = apply_replacements(text, [
        Replacement(Span("m.py", 6, 4, 7, 16), ""),
        Replacement(Span("m.py", 4, 0, 4, 0), "@x.function\ndef inner(a):\n    return a\n"),
    ])
    assert moved.startswith("import x\n\n\n@x.function\ndef inner(a):\n    return a\n\n\ndef outer(xs):\n")
    assert "    @x.function" not in moved
    loop = "for i in range(3):\n    ds = make()\n    use(ds)\n"
    hoisted = apply_replacements(loop, [
        Replacement(Span("m.py", 2, 4, 2, 15), ""), Replacement(Span("m.py", 1, 0, 1, 0), "ds = make()\n")
    ])
    assert hoisted == "ds = make()\n\n\nfor i in range(3):\n    use(ds)\n"
    with pytest.raises(RewriteError):  # new lines only before a statement
        apply_replacements(loop, [Replacement(Span("m.py", 2, 9, 2, 9), "y = 1\n")])
    with pytest.raises(RewriteError):  # no text removes a statement, never an expression
        apply_replacements(loop, [Replacement(Span("m.py", 2, 9, 2, 15), "")])


HOISTS = """import tensorflow as tf
import numpy as np


class Config:
    def __init__(self, scale):
        self.scale = scale


class Noisy:
    def __init__(self, scale):
        print("made")
        self.scale = scale


def run(values, factor):
    for epoch in range(3):
        ds = tf.data.Dataset.from_tensor_slices(values).map(lambda v: v * 2)
        shuffled = tf.data.Dataset.from_tensor_slices(np.random.permutation(values))
        per_epoch = tf.data.Dataset.from_tensor_slices(values).skip(epoch)
        config = Config(2.0)
        noisy = Noisy(2.0)
        use(ds, shuffled, per_epoch, config, noisy)
"""


def test_only_what_is_the_same_on_every_pass_moves_out_of_its_loop(tmp_path: Path) -> None:
    from tfretrace.fix.core.hoist import pipeline_edits
    from tfretrace.fix.kinds.hoist_object import object_edits

    path = tmp_path / "hoists.py"
    path.write_text(HOISTS)
    reader = SourceReader()
    moved = pipeline_edits(reader, f"{path}:18")
    assert moved is not None and moved[1].span.line == 17 and moved[1].text.startswith("ds = tf.data")
    assert pipeline_edits(reader, f"{path}:19") is None  # a NumPy call: a new permutation each pass
    assert pipeline_edits(reader, f"{path}:20") is None  # reads the loop's own variable
    assert object_edits(reader, f"{path}:23", "config") is not None
    assert object_edits(reader, f"{path}:23", "noisy") is None  # its __init__ prints: made once would skip that


def test_a_def_that_closes_over_its_outer_function_stays_and_is_advice(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL)
    sigs, objects = [], []
    for obj in range(1, 6):
        sigs += [(t("x", 32, 10),), (t("x", 4, 10),)]
        objects += [obj, obj]
    rep = report(sigs, location=f"{path}:12", name="run.<locals>.inner", sites=[f"{path}:19"], objects=objects)
    steps = plan_for(rep, SourceReader())
    made = [(s.kind, s.by) for s in steps if s.kind != "statement"]
    assert made == [("input-signature", "tfretrace"), ("advice", "hand")]


NESTED = """import tensorflow as tf


def evaluate(batches):
    @tf.function
    def batch_error(x):
        return tf.reduce_sum(x)

    return [batch_error(x) for x in batches]
"""


def test_a_def_that_closes_over_nothing_moves_and_the_signature_follows_it(tmp_path: Path) -> None:
    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    sigs, objects = [], []
    for obj in range(1, 4):
        sigs += [(t("x", 8, 5),), (t("x", 8, 7),)]
        objects += [obj, obj]
    rep = report(sigs, location=f"{path}:5", name="evaluate.<locals>.batch_error", sites=[f"{path}:9"],
                 objects=objects)
    steps = plan_for(rep, SourceReader())
    assert [(s.kind, s.by, s.traces_before, s.traces_after) for s in steps] == [
        ("hoist-def", "tfretrace", 6, 2),
        ("input-signature", "tfretrace", 2, 1),
    ]
    hoist, signature = steps
    # The signature step rewrites the same two places: the def removed, the moved def with the new decorator.
    assert [e.span for e in signature.edits] == [e.span for e in hoist.edits]
    moved = signature.edits[1].text
    assert moved.startswith("@tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])")
    assert "\ndef batch_error(x):\n    return tf.reduce_sum(x)\n" in moved
    from edit_helpers import apply_edits
    from tfretrace.fix.applying.apply import _overlaps

    # What fix --apply writes: the later step's edits replace the earlier ones at the same places.
    kept = [e for e in hoist.edits if not any(_overlaps(e, s) for s in signature.edits)] + list(signature.edits)
    edited = apply_edits(NESTED, kept)
    assert edited.index("def batch_error") < edited.index("def evaluate")
    compile(edited, "nested.py", "exec")


def test_a_smaller_batch_from_another_call_site_is_no_partial_batch(tmp_path: Path) -> None:
    # (16, 2) from the training loop, (1, 2) from a single prediction elsewhere: not a remainder.
    # The body reads the batch size, so no signature covers both and drop_remainder is the candidate.
    path = tmp_path / "loop.py"
    path.write_text(PARTIAL.replace("return tf.reduce_sum(x)", "return tf.reduce_sum(x) / x.shape[0]"))
    rep = report([(t("x", 32, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18", f"{path}:19"])
    assert "drop-remainder" not in [s.kind for s in plan_for(rep, SourceReader())]
    # From one call site it is a remainder.
    same = report([(t("x", 32, 10),), (t("x", 4, 10),)], location=f"{path}:6", sites=[f"{path}:18"])
    assert [s.kind for s in plan_for(same, SourceReader())] == ["drop-remainder"]


BRANCHES = """import tensorflow as tf


@tf.function
def layer_count(x, depth):
    if depth > 2:
        x = tf.nn.relu(x)
    return x


for depth in range(4):
    layer_count(tf.ones([2]), depth)
"""


def test_a_python_if_on_the_value_keeps_it_a_python_value(tmp_path: Path) -> None:
    from test_fix_plan import py

    path = tmp_path / "branches.py"
    path.write_text(BRANCHES)
    rep = report([(t("x", 2), py("depth", d)) for d in range(4)], location=f"{path}:4", name="layer_count",
                 sites=[f"{path}:12"])
    steps = plan_for(rep, SourceReader())
    assert {s.kind for s in steps} == {"statement"}
    assert steps[0].python_use == "a Python if on depth"


def test_verify_keeps_two_pipelines_of_one_file_apart(tmp_path: Path) -> None:
    # Two Dataset.map(<lambda>) rows of one file: the rebuilt one (3 traces) and one built once
    # per column (13 traces, none a retrace). With no edit made, each is measured as itself.
    rebuilt = replace(storm(3, name="Dataset.map(<lambda>)"), location="train.py:40")
    columns = replace(healthy("Dataset.map(<lambda>)", "train.py:12"), traces=13)
    outcomes = _compare(session(columns, rebuilt), session(rebuilt, columns), tmp_path)
    assert [(o.location, o.traces_before, o.traces_after) for o in outcomes] == [("train.py:40", 3, 3)]
    # The edit moved both pipelines down two lines: still paired in line order.
    moved = (replace(columns, location="train.py:14"), replace(rebuilt, location="train.py:42", traces=1))
    outcomes = _compare(session(columns, rebuilt), session(*reversed(moved)), tmp_path)
    assert [(o.location, o.traces_before, o.traces_after) for o in outcomes] == [("train.py:40", 3, 1)]


def test_reading_predict_function_says_why_the_predict_call_fix_is_off(tmp_path: Path) -> None:
    from tfretrace.records.events import KerasInfo

    program = "import numpy as np\nfor n in (3, 5):\n    out = model.predict(np.zeros((n, 4)), verbose=0)\n"
    keras = KerasInfo("model", "Sequential", "predict")
    kinds = {}
    for extra in ("", "print(model.predict_function.experimental_get_tracing_count())\n"):
        path = tmp_path / "prog.py"
        path.write_text(program + extra)
        rep = report([(t("x", n, 4),) for n in (3, 5)], location="keras/src/backend/tensorflow/trainer.py:279",
                     name="one_step_on_data_distributed", sites=[f"{path}:3"], keras=keras)
        kinds[bool(extra)] = {s.kind: s.summary for s in plan_for(rep, SourceReader())}
    assert "keras-call" in kinds[False]
    # Reading predict_function: the call fix is off, and a statement names the line that turns it off.
    assert "keras-call" not in kinds[True]
    assert f"{tmp_path / 'prog.py'}:4 reads model.predict_function" in kinds[True]["statement"]
