"""`tfretrace fix --apply` writes only safe edits: realistic programs an unsafe edit would break, on real TensorFlow.

Each ``p*`` program in tests/data/fix_safety is one case of issue 29's adversarial pass, where an
edit tfretrace offers changes what the program prints or crashes it. ``fix --apply`` must leave
each unchanged (the step is ``unsafe``, with its reason, and not written); ``--unsafe-fixes``
writes it, and the program then prints something else, which is why the step is unsafe. Each
``c*`` program is the same pattern with nothing a pass could change: its step is ``safe``,
written by ``--apply``, and the program prints what it printed. All programs run in one process
per stage (record, apply, run again) to keep the test short.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fix_safety_helpers import Applied, lines_of, record_and_apply
from tfretrace._tf.versions import keras_in_use

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

PROGRAMS = Path(__file__).resolve().parent / "data" / "fix_safety"

# (module, the step kind tfretrace offers for it): issue 29's items 1 to 11.
UNSAFE = [
    ("p01_def_reads_dict", "hoist-def"),  # 1: a nested def reads a module dict set per pass
    ("p01b_wrap_reads_dict", "hoist-wrap"),  # 1: tf.function(f) where f reads such a dict
    ("p02_factory_class_attr", "hoist-factory-call"),  # 2: the def reads a class attribute the loop anneals
    ("p03_object_helper", "hoist-object"),  # 3: a helper changes the config object each pass
    ("p03b_object_setattr", "hoist-object"),  # 3: setattr changes it
    ("p04_vectorized_loop", "wrap-vectorized-map"),  # 4: for fn in (square, cube)
    ("p05b_derived_shape", "input-signature"),  # 5: `if y.shape[0] == 1` on a derived tensor
    ("p06_none_branch_ones", "zero-state"),  # 6: the None branch starts from ones
    ("p07_seeded_shuffle", "hoist-pipeline"),  # 7: a seeded shuffle repeats its order each build
    ("p11_del_each_pass", "hoist-wrap"),  # 11: `del name` at the end of each pass
    # A float the body tests with isinstance in Python: a tensor takes the other branch. TensorFlow
    # traces it to the same outputs, but its graph has an operation more than each trace of the run.
    ("p13_rate_type_test", "tensor-argument"),
    # The same test in a helper the body calls, with shapes that vary: the open signature traces to the
    # same outputs (the last session's planner wrote it as safe, and --apply printed results 100 times
    # smaller); TensorFlow's graph of rate as a tensor has other operations than each trace's.
    ("p14_rate_helper_type_test", "input-signature"),
]
# 5: tf.ones(shape=mean.shape) with an open dimension: TensorFlow raises tracing the signature, so no apply
# writes it (--unsafe-fixes once did, and the program crashed); by hand, with the exception.
REFUSED = [("p05_static_shape", "input-signature")]
SAFE = [
    ("c01_def_constant", "hoist-def"),
    ("c02_factory_constant", "hoist-factory-call"),
    ("c03_object_only_passed", "hoist-object"),
    ("c04_vectorized_def", "wrap-vectorized-map"),
    ("c07_pipeline_no_shuffle", "hoist-pipeline"),
    # A padded length of 12 in every recorded call: TensorFlow traces the body with it open.
    ("p12_padded", "input-signature"),
    # 8: a rate times float64 data: TensorFlow traces lr as float64, and each trace's graph used it
    # only as data (the same operations, lr's constant where the tensor is read).
    ("p08_float_times_f64", "tensor-argument"),
    # 9: an int the body divides (`step / 10`, float64 whatever the int dtype): never an int tensor (it
    # crashed); TensorFlow traces it as float32 and runs both versions to the same results.
    ("p09_int_divided", "tensor-argument"),
    # 10: a model overriding predict_step (argmax): calling it as model(x) would skip that step, so
    # the predict call is padded to full batches instead; the live model, run again on the rows
    # predict got, shows each row computed alone, and predict_step still runs.
    ("p10_predict_step", "keras-pad-rows"),
]
if (_keras := keras_in_use()) is not None and _keras[0] == "keras" and _keras[1].split(".")[0] == "2":
    # TF 2.15's Keras 2 predicts on a dataset whose batch dimension is None from the first call:
    # it never retraces there (tools/matrix.py KNOWN_DIFFERENCES), so item 10 has no step to classify.
    SAFE = [u for u in SAFE if u[0] != "p10_predict_step"]
MODULES = [m for m, _k in UNSAFE + SAFE + REFUSED]


def _prefix(module: str) -> str:
    return module.split("_", 1)[0]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Applied:
    return record_and_apply(PROGRAMS, tmp_path_factory.mktemp("safe") / "prog", MODULES)


@pytest.fixture(scope="module")
def after(applied: Applied) -> str:
    return applied.rerun(MODULES)


@pytest.mark.parametrize(("module", "kind"), UNSAFE, ids=[m for m, _k in UNSAFE])
def test_apply_leaves_a_program_an_unsafe_edit_would_change(applied: Applied, after: str, module: str,
                                                           kind: str) -> None:
    assert lines_of(applied.before, _prefix(module))
    assert lines_of(after, _prefix(module)) == lines_of(applied.before, _prefix(module))
    assert not applied.edited(module)
    steps = [s for s in applied.function(module)["plan"] if s["kind"] == kind]
    assert steps, f"{module}: no {kind} step offered"
    assert steps[0]["safety"] == "unsafe" and steps[0]["unsafe_reason"]
    if kind == "input-signature":
        assert "checked" not in steps[0]  # TensorFlow did not trace it to the run's outputs


def test_a_python_number_becomes_a_tensor_only_of_a_dtype_tensorflow_traced(applied: Applied) -> None:
    # Item 8: TensorFlow traced lr as float64 (float32 times float64 data fails), used only as data.
    (step,) = [s for s in applied.function("p08_float_times_f64")["plan"] if s["kind"] == "tensor-argument"]
    assert step["checked"] == "tensorflow" and step["safety"] == "safe"
    assert [e["text"] for e in step["edits"]] == ["tf.constant(lr, dtype=tf.float64)"]
    # Item 9: `step / 10` is float64 whatever the int dtype (TensorFlow refuses int32 and int64 there): a
    # float32 tensor, the last dtype asked for an int, which TensorFlow ran beside each trace.
    (step,) = [s for s in applied.function("p09_int_divided")["plan"] if s["kind"] == "tensor-argument"]
    assert step["checked"] == "tensorflow" and step["safety"] == "safe" and step["checked_inputs"] >= 3
    assert [e["text"] for e in step["edits"]] == ["tf.constant(step, dtype=tf.float32)"]


@pytest.mark.parametrize(("module", "kind"), SAFE, ids=[m for m, _k in SAFE])
def test_apply_makes_a_safe_edit_and_the_program_prints_the_same(applied: Applied, after: str, module: str,
                                                                kind: str) -> None:
    function = applied.function(module)
    steps = [s for s in function["plan"] if s["kind"] == kind]
    assert [s["safety"] for s in steps] == ["safe"]
    assert function["fix_counts"]["apply"] < function["traces"]
    assert applied.edited(module)
    assert lines_of(after, _prefix(module)) == lines_of(applied.before, _prefix(module))


def test_the_padded_length_of_one_dataset_does_not_break_another(applied: Applied) -> None:
    # Recorded on dataset 0 (every batch padded to 12): the signature leaves that length open, since
    # TensorFlow traced the body with it open, and the edited program runs datasets 1 to 3.
    steps = [s for s in applied.function("p12_padded")["plan"] if s["kind"] == "input-signature"]
    assert steps[0]["checked"] == "tensorflow"
    assert "shape=[None, None]" in (applied.folder / "p12_padded.py").read_text()
    others = applied.rerun(["p12_padded"], DATASETS="1,2,3")
    assert "CRASH" not in others
    assert [line.split()[1] for line in lines_of(others, "p12")] == ["1", "2", "3"]


def test_unsafe_fixes_writes_them_and_says_why(tmp_path: Path) -> None:
    unsafe = [m for m, _k in UNSAFE]
    refused = [m for m, _k in REFUSED]
    made = record_and_apply(PROGRAMS, tmp_path / "prog", unsafe + refused, "--unsafe-fixes")
    assert all(made.edited(m) for m in unsafe)
    # A signature TensorFlow raised on is not written even so: the program runs and prints the same.
    assert not any(made.edited(m) for m in refused)
    again = made.rerun(refused)
    assert all(lines_of(again, _prefix(m)) == lines_of(made.before, _prefix(m)) for m in refused)
    for module, kind in REFUSED:
        (step,) = [s for s in made.function(module)["plan"] if s["kind"] == kind]
        assert step["safety"] == "advice" and not step["edits"] and step["refused"].startswith("ValueError")
    # Each unsafe step is printed with its reason (a program may have two: a call site and a signature).
    unsafe_steps = [s for m in unsafe for s in made.function(m)["plan"] if s.get("safety") == "unsafe"]
    listed = [line for line in made.fix_output.splitlines() if line.startswith("      unsafe: ")]
    assert len(listed) == len(unsafe_steps) >= len(unsafe)
    # What makes them unsafe: each program now prints something else, or crashes.
    after = made.rerun(unsafe)
    changed = [m for m in unsafe if lines_of(after, _prefix(m)) != lines_of(made.before, _prefix(m))]
    assert changed == unsafe


PROBED = '''import tensorflow as tf


@tf.function
def total(x):
    return tf.reduce_sum(x, axis=1)


@tf.function
def ones_like_shape(x):
    return x + tf.ones(shape=x.shape)


@tf.function
def first_or_all(x):
    if x.shape[0] == 1:
        return x[0]
    return x
'''


def test_tensorflow_says_which_open_signature_traces_as_the_run_did(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import tensorflow as tf

    from tfretrace._tf.live_functions import live_function
    from tfretrace._tf.probe import probe_signature

    (tmp_path / "probed_mod.py").write_text(PROBED)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("probed_mod")
    for n in (1, 2):
        for fn in (module.total, module.ones_like_shape, module.first_or_all):
            fn(tf.ones([n, 3]))
    spec = "[tf.TensorSpec(shape=[None, None], dtype=tf.float32)]"
    found = {name: live_function("probed_mod.py", name, str(tmp_path)) for name in
             ("total", "ones_like_shape", "first_or_all")}
    assert all(f is not None for f in found.values())
    assert probe_signature(found["total"], spec, "tf") is None
    assert probe_signature(found["ones_like_shape"], spec, "tf") is not None  # fails to trace
    assert probe_signature(found["first_or_all"], spec, "tf") is not None  # another rank than n=1's trace
    # The user's own objects are not traced again: the probe traces a fresh copy.
    assert [found[n].experimental_get_tracing_count() for n in found] == [2, 2, 2]
    assert live_function("probed_mod.py", "run.<locals>.inner", str(tmp_path)) is None
