"""Real TensorFlow/Keras: the diagnosis of issue 10 on reduced real programs (Keras models that are
not retraces and those that are, time counted once for nested traces)."""

from __future__ import annotations

import time
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tfretrace  # noqa: E402
from keras_roles import batch_step, iterator_per_call, tf_functions  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402
from tfretrace.records.session import Session  # noqa: E402

pytestmark = pytest.mark.tf

layers = keras.layers


def watch() -> typing.ContextManager[tfretrace.Monitor]:
    return tfretrace.watch(warn=False, log=False)


def tf_count(*functions: Any) -> int:
    return sum(f.experimental_get_tracing_count() for f in functions)


def trainer_functions(model: Any) -> list[Any]:
    """The tf.functions behind model.train_function / test_function, nested ones included."""
    return [f for role in ("train", "test") for f in tf_functions(model, role).values()]


def assert_no_retrace(session: Session) -> None:
    assert session.total_retraces == 0, [(f.display_name(), [e.cause for e in f.events]) for f in session.functions]
    for fn in session.functions:
        assert fn.retraces == 0
        assert all(e.expected for e in fn.events), fn.display_name()


# -------------------------------------------------------------------------------------------------
# Distinct models, each doing its own job once: no retrace


def test_encoder_decoder_inference_pair_each_predicting_once() -> None:
    # Reduced from the keras-io character-level seq2seq example: after training, an encoder model
    # and a decoder model are built from the trained layers and each predicts.
    with watch() as mon:
        enc_in = keras.Input((None, 5))
        _, h, c = layers.LSTM(8, return_state=True)(enc_in)
        encoder = keras.Model(enc_in, [h, c], name="encoder")
        dec_in, h_in, c_in = keras.Input((None, 5)), keras.Input((8,)), keras.Input((8,))
        lstm = layers.LSTM(8, return_sequences=True, return_state=True)
        dec_seq, h_out, c_out = lstm(dec_in, initial_state=[h_in, c_in])
        decoder = keras.Model([dec_in, h_in, c_in], [layers.Dense(5)(dec_seq), h_out, c_out], name="decoder")
        states = encoder.predict(np.ones((1, 7, 5), "float32"), verbose=0)
        decoder.predict([np.ones((1, 1, 5), "float32"), *states], verbose=0)
    session = mon.session()
    assert_no_retrace(session)
    assert sorted(f.display_name() for f in session.functions) == ["decoder.predict", "encoder.predict"]
    for model in (encoder, decoder):
        fn = session.function(f"{model.name}.predict")
        assert fn.traces == tf_count(model.predict_function) == 1
        assert [e.cause for e in fn.events] == ["first-trace"]
        assert fn.keras_models() == [model.name]


def test_gan_discriminator_and_combined_model_under_train_on_batch() -> None:
    # Reduced from the classic Keras GAN loop: the discriminator trains on real and fake halves,
    # the generator predicts the fakes, the combined model (generator + discriminator) trains the
    # generator; all with train_on_batch. The combined model is compiled first and the
    # discriminator after it: the classic order (compile the discriminator, freeze it, compile
    # the combined model) fails inside Keras 3.4-3.6's own train_on_batch (its loss tracker is None).
    with watch() as mon:
        disc = keras.Sequential(
            [keras.Input((2,)), layers.Dense(8, activation="relu"), layers.Dense(1, activation="sigmoid")],
            name="discriminator",
        )
        gen = keras.Sequential(
            [keras.Input((3,)), layers.Dense(8, activation="relu"), layers.Dense(2)], name="generator"
        )
        disc.trainable = False
        gan = keras.Sequential([gen, disc], name="gan")
        gan.compile(loss="binary_crossentropy", optimizer="adam")
        disc.trainable = True
        disc.compile(loss="binary_crossentropy", optimizer="adam")
        rng = np.random.default_rng(0)
        for _ in range(3):
            fake = gen.predict(rng.normal(size=(16, 3)).astype("float32"), verbose=0)
            disc.train_on_batch(rng.random((16, 2)).astype("float32"), np.ones((16, 1), "float32"))
            disc.train_on_batch(fake, np.zeros((16, 1), "float32"))
            gan.train_on_batch(rng.normal(size=(32, 3)).astype("float32"), np.ones((32, 1), "float32"))
    session = mon.session()
    for fn in session.functions:
        if iterator_per_call(fn):
            # Keras 3.4-3.6 retrace their iterator step at every train_on_batch call (a new
            # generator each time, counted by TensorFlow too); the models' own steps do not retrace.
            assert {e.cause for e in fn.events if not e.expected} == {"object-identity"}
            assert all(e.expected for e in batch_step(fn).events)
        else:
            assert fn.retraces == 0 and all(e.expected for e in fn.events), fn.display_name()
    names = {f.display_name() for f in session.functions}
    assert names == {"discriminator.train_on_batch", "generator.predict", "gan.train_on_batch"}
    assert session.function("discriminator.train_on_batch").traces == tf_count(*trainer_functions(disc))
    assert session.function("gan.train_on_batch").traces == tf_count(*trainer_functions(gan))
    assert session.function("generator.predict").traces == tf_count(gen.predict_function) == 1


def _seq(name: str, *hidden: Any) -> Any:
    return keras.Sequential([keras.Input((6,)), *hidden, layers.Dense(1)], name=name)


def _dense(units: int, reg: Any = None) -> Any:
    return layers.Dense(units, activation="elu", kernel_regularizer=reg)


def _tiny() -> Any:
    return _seq("tiny", _dense(4))


def _small() -> Any:
    return _seq("small", _dense(8), _dense(8))


def _medium() -> Any:
    return _seq("medium", *(_dense(16) for _ in range(3)))


def _large() -> Any:
    return _seq("large", *(_dense(32) for _ in range(4)))


def _l2() -> Any:
    return _seq("l2", _dense(32, keras.regularizers.l2(0.001)))


def _dropout() -> Any:
    return _seq("dropout", _dense(32), layers.Dropout(0.5))


def _combined() -> Any:
    return _seq("combined", _dense(16, keras.regularizers.l2(0.001)), layers.Dropout(0.5))


def test_seven_architectures_each_fit_once_with_validation() -> None:
    # Reduced from TensorFlow's "Overfit and underfit" tutorial: seven models (sizes, L2, dropout,
    # both) each compiled and fit once by one helper, with validation data.
    x = np.random.default_rng(1).random((32, 6)).astype("float32")
    y = (x.sum(axis=1, keepdims=True) > 3).astype("float32")

    def compile_and_fit(model: Any) -> None:
        model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=16, epochs=2, validation_data=(x, y), verbose=0)

    with watch() as mon:
        models = [build() for build in (_tiny, _small, _medium, _large, _l2, _dropout, _combined)]
        for model in models:
            compile_and_fit(model)
    session = mon.session()
    assert_no_retrace(session)
    assert len(session.functions) == 14  # one fit row and one evaluate row per model
    for model in models:
        fit, val = session.function(f"{model.name}.fit"), session.function(f"{model.name}.evaluate")
        assert fit.traces + val.traces == tf_count(*trainer_functions(model))
        assert fit.keras_models() == val.keras_models() == [model.name]


def test_grid_search_and_k_fold_models_from_one_builder() -> None:
    # A grid search over layer sizes (other architectures) and a k-fold cross-validation (one
    # architecture, a fresh model per fold), each model fit then evaluated: all first traces.
    x = np.ones((16, 4), "float32")
    y = np.ones((16, 1), "float32")

    def build(units: int) -> Any:
        model = keras.Sequential([keras.Input((4,)), layers.Dense(units, activation="relu"), layers.Dense(1)])
        model.compile("adam", "mse")
        return model

    with watch() as mon:
        models = []
        for units in (4, 8, 16):
            models.append(build(units))
            models[-1].fit(x, y, batch_size=8, verbose=0)
            models[-1].evaluate(x, y, verbose=0)
        for _ in range(3):
            models.append(build(4))
            models[-1].fit(x, y, batch_size=8, verbose=0)
            models[-1].evaluate(x, y, verbose=0)
    session = mon.session()
    assert_no_retrace(session)
    assert session.total_traces == sum(tf_count(*trainer_functions(m)) for m in models)
    # the folds share the rows of the first 4-unit model (same place, same layers)
    fold_fit = next(f for f in session.functions if f.display_name().startswith("Keras fit (4 models"))
    assert fold_fit.keras_models() == [models[0].name] + [m.name for m in models[3:]]


# -------------------------------------------------------------------------------------------------
# The same model (or the same model rebuilt / re-loaded for the same job): retraces


def test_model_built_per_request_retraces_at_the_predict_call() -> None:
    def handle(request: Any) -> Any:
        model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
        return model.predict(request, verbose=0)  # PREDICT

    with watch() as mon:
        for _ in range(4):
            handle(np.ones((2, 4), "float32"))
    session = mon.session()
    assert len(session.functions) == 1
    fn = session.functions[0]
    assert [e.cause for e in fn.events] == ["first-trace"] + ["keras-new-model"] * 3
    assert [e.expected for e in fn.events] == [True, False, False, False]
    assert fn.retraces == session.total_retraces == 3
    assert fn.objects == 4
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if text.endswith("# PREDICT"))
    assert {e.call_site for e in fn.events} == {f"tests/test_diagnosis.py:{line}"}


def test_load_model_per_call_retraces(tmp_path: Path) -> None:
    path = tmp_path / "clf.keras"
    keras.Sequential([keras.Input((4,)), layers.Dense(2)], name="clf").save(path)
    loaded = []
    with watch() as mon:
        for _ in range(3):
            loaded.append(keras.models.load_model(path))
            loaded[-1].predict(np.ones((2, 4), "float32"), verbose=0)
    fn = mon.session().function("clf.predict")
    assert [e.cause for e in fn.events] == ["first-trace", "keras-load-model", "keras-load-model"]
    assert fn.retraces == 2
    assert fn.traces == tf_count(*(m.predict_function for m in loaded)) == 3


def test_same_model_on_new_shapes_and_compile_again_retraces() -> None:
    model = keras.Sequential([keras.Input((3,)), layers.Dense(1)], name="reg")
    functions = []
    with watch() as mon:
        model.compile("sgd", "mse")
        for n in (4, 4, 6):
            model.train_on_batch(np.ones((n, 3), "float32"), np.ones((n, 1), "float32"))
        functions += trainer_functions(model)
        model.compile("sgd", "mse")
        model.train_on_batch(np.ones((6, 3), "float32"), np.ones((6, 1), "float32"))
        functions += trainer_functions(model)
    fn = mon.session().function("reg.train_on_batch")
    if iterator_per_call(fn):
        # Keras 3.4-3.6: each train_on_batch call hands the step a new generator (TensorFlow
        # retraces it every call); the new shape is in the folded batch step.
        assert [e.cause for e in fn.events if not e.expected] == ["object-identity"] * 2 + ["keras-recompile"]
        assert "shape-changed" in [e.cause for e in batch_step(fn).events]
    else:
        assert [e.cause for e in fn.events if not e.expected] == ["shape-changed", "keras-recompile"]
        assert fn.retraces == 2
    assert fn.traces == tf_count(*functions)
    # compile() again makes new functions: 2 objects (4 on Keras 3.4-3.6: iterator and batch steps)
    assert fn.objects == (4 if iterator_per_call(fn) else 2)


# -------------------------------------------------------------------------------------------------
# Time counted once


def test_nested_one_second_trace_counts_one_second() -> None:
    @tf.function
    def inner(x: Any) -> Any:
        time.sleep(1.0)  # a slow trace: runs only while tracing
        return x + 1.0

    @tf.function
    def outer(x: Any) -> Any:
        return inner(x) * 2.0

    with watch() as mon:
        outer(tf.constant(1.0))
    session = mon.session()
    o, i = session.function("outer"), session.function("inner")
    assert (o.traces, i.traces) == (tf_count(outer), tf_count(inner)) == (1, 1)
    assert i.events[0].nested and not o.events[0].nested
    assert i.trace_seconds >= 1.0
    outer_all = o.events[0].total_seconds
    # outer's own time leaves the nested trace out; together they are outer's whole trace
    assert o.trace_seconds == pytest.approx(outer_all - i.events[0].total_seconds, abs=0.01)
    total = sum(f.trace_seconds for f in session.functions)
    assert total == pytest.approx(outer_all, abs=0.01)
    assert total < outer_all + 0.9  # not 2 s for the 1-second trace
    assert sum(r.share_of_wall for r in session.summary()) <= 1.0
    loaded = Session.from_dict(session.to_dict())
    assert loaded.function("outer").events[0].total_seconds == pytest.approx(o.events[0].total_seconds, abs=1e-5)
    assert isinstance(loaded.function("inner"), FunctionReport)


# -------------------------------------------------------------------------------------------------
# Labels: warnings carry their trace, nested watch() announces once, refused traces are shown


def test_retracing_warning_carries_its_trace_and_nested_watch_announces_once() -> None:
    @tf.function
    def scale(x: Any) -> Any:
        return x * 2.0

    with (
        pytest.warns(tfretrace.RetracingWarning) as record,
        tfretrace.watch(log=False) as outer,
        tfretrace.watch(log=False) as inner,
    ):
        scale(tf.ones([2]))
        scale(tf.ones([3]))
    retraces = [w.message for w in record if isinstance(w.message, tfretrace.RetracingWarning)]
    assert len(retraces) == 1
    warning = retraces[0]
    assert (warning.cause, warning.function) == ("shape-changed", outer.state("scale").name)
    assert warning.event is not None and warning.event.index == 2
    # both blocks recorded the trace
    for mon in (outer, inner):
        assert mon.session().function("scale").traces == tf_count(scale) == 2


def test_refused_trace_is_shown_as_refused() -> None:
    from tfretrace.render.text import TextRenderer

    @tf.function
    def step(x: Any) -> Any:
        return x + 1.0

    with tfretrace.watch(warn=False, log=False) as mon, tfretrace.budget(step, max_traces=1):
        step(tf.ones([2]))
        with pytest.raises(tfretrace.RetraceError):
            step(tf.ones([3]))
    session = mon.session()
    fn = session.function("step")
    assert (fn.traces, fn.refused_traces) == (tf_count(step), 1) == (1, 1)
    text = TextRenderer(width=100, color=False).render(session)
    assert "No function retraced" not in text
    assert "1 trace(s) refused" in text
    assert Session.from_dict(session.to_dict()).function("step").refused_traces == 1
