"""Run every fix-kind scenario on real TensorFlow in one process: plan, apply, measure (used by test_fix_real.py).

Usage: python tests/fix_scenarios.py OUT_DIR. Writes OUT_DIR/results.json. Two logical CPUs are set
up first so the MirroredStrategy scenario runs too. Each program is our own reduction of a real
pattern (tutorial custom loops, RNN state, tf.distribute custom loops, Keras predict).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import textwrap
from pathlib import Path
from typing import Any

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import tfretrace  # noqa: E402
from tfretrace.fix.core.source import Replacement  # noqa: E402
from tfretrace.fix.planning.plan import predict_applied  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from edit_helpers import apply_edits  # noqa: E402
from keras_roles import role_of  # noqa: E402


def _p(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def _example(name: str) -> str:
    # The wild cases of issue 9 are also runnable examples (examples/wild/), measured by bench/fix_effect.py.
    return (Path(__file__).resolve().parents[1] / "examples" / "wild" / f"{name}.py").read_text(encoding="utf-8")


# name -> (program, function qualname, hand-edited program for advice-only steps or None)
# A hand-edited program that moves a def renames the function: AFTER_NAMES gives the new name.
AFTER_NAMES = {"def_in_method": "score"}
SCENARIOS: dict[str, tuple[str, str, str | None]] = {
    "widening_shapes": (
        _example("widening_shapes"),
        "encode",
        None,
    ),
    "reduce_retracing": (
        _p("""
        import tensorflow as tf

        @tf.function
        def scale(x, mode):
            return x * 2.0 if mode == "train" else x

        for n in range(3, 9):
            scale(tf.ones([n]), "train")
        """),
        "scale",
        None,
    ),
    "python_lr": (
        _p("""
        import tensorflow as tf

        w = tf.Variable(tf.ones([4]))

        @tf.function
        def update(grad, lr):
            w.assign_sub(lr * grad)
            return w

        lr = 0.1
        for epoch in range(5):
            update(tf.ones([4]), lr)
            lr *= 0.5
        """),
        "update",
        None,
    ),
    "class_index": (
        _example("class_index"),
        "class_loss",
        None,
    ),
    "dtype_cast": (
        _p("""
        import numpy as np
        import tensorflow as tf

        @tf.function
        def norm(x):
            return tf.reduce_sum(x * x)

        for i in range(4):
            data = np.ones(6, dtype=np.float64 if i % 2 else np.float32)
            norm(data)
        """),
        "norm",
        None,
    ),
    "none_state": (
        _example("none_state"),
        "cell",
        None,
    ),
    "partial_batch": (
        _example("partial_batch"),
        "train_step",
        None,
    ),
    "def_in_method": (
        _example("def_in_method"),
        "Evaluator.run.<locals>.score",
        _p("""
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices(tf.ones([20, 3])).batch(8, drop_remainder=True)

        @tf.function
        def score(x, scale):
            return tf.reduce_sum(x) * scale

        class Evaluator:
            def __init__(self, scale):
                self.scale = scale

            def run(self):
                return [float(score(x, self.scale)) for x in data]

        for epoch in range(5):
            Evaluator(2.0).run()
        """),
    ),
    "per_replica": (
        _example("per_replica"),
        "distributed_step",
        None,
    ),
    "per_replica_generator": (
        # The distributed dataset iterated by a generator expression instead of a for statement.
        _p("""
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        dist = strategy.experimental_distribute_dataset(tf.data.Dataset.range(20).batch(8))

        @tf.function
        def step(batch):
            per_replica = strategy.run(lambda x: tf.reduce_sum(x), args=(batch,))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

        for epoch in range(2):
            total = sum(int(step(b)) for b in dist)
        """),
        "step",
        None,
    ),
    "new_config_object": (
        _p("""
        import tensorflow as tf

        class Config:
            def __init__(self, scale):
                self.scale = scale

        @tf.function
        def apply(x, config):
            return x * config.scale

        for step in range(4):
            apply(tf.ones([3]), Config(2.0))
        """),
        "apply",
        _p("""
        import tensorflow as tf

        class Config:
            def __init__(self, scale):
                self.scale = scale

        @tf.function
        def apply(x, config):
            return x * config.scale

        config = Config(2.0)
        for step in range(4):
            apply(tf.ones([3]), config)
        """),
    ),
    "read_only_variable": (
        _p("""
        import tensorflow as tf

        @tf.function
        def copy_clipped(dst, src):
            dst.assign(tf.clip_by_value(src, -1.0, 1.0))

        weights = tf.Variable(tf.ones([4]))
        ema = tf.Variable(tf.zeros([4]))
        frozen = tf.Variable(tf.ones([4]), trainable=False)
        copy_clipped(ema, weights)
        copy_clipped(weights, ema)  # hits the first trace: never recorded, still edited
        copy_clipped(ema, frozen)
        copy_clipped(weights, weights)
        """),
        "copy_clipped",
        None,
    ),
    "list_of_tensors": (
        _p("""
        import tensorflow as tf

        @tf.function
        def total(losses):
            return tf.add_n(losses)

        for n in (2, 3, 4):
            total([tf.constant(1.0)] * n)
        """),
        "total",
        None,  # tfretrace stacks the list and sums it with reduce_sum itself (the body only add_n's it)
    ),
    "tutorial_loop": (
        # The shape of the "training loop from scratch" guides: Keras model, optimizer slots created
        # on the first step (an expected variable-creation trace), and a partial last batch.
        _p("""
        import numpy as np
        import keras
        import tensorflow as tf

        x_train = np.random.default_rng(0).normal(size=(200, 8)).astype("float32")
        y_train = (x_train.sum(axis=1) > 0).astype("int32")
        train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(64).batch(48)

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
        optimizer = keras.optimizers.Adam(1e-3)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss_value = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply_gradients(zip(grads, model.trainable_weights))
            return loss_value

        for epoch in range(3):
            for x_batch, y_batch in train_dataset:
                train_step(x_batch, y_batch)
        """),
        "train_step",
        None,
    ),
    "train_and_validation": (
        # keras-io's "training loop from scratch": two datasets batched with one size variable, the
        # training batches unpacked from enumerate(); only the training dataset's batch() is edited.
        _p("""
        import numpy as np
        import keras
        import tensorflow as tf

        batch_size = 32
        rng = np.random.default_rng(0)
        x_train, y_train = rng.random((200, 8), dtype=np.float32), rng.integers(0, 2, 200)
        x_val, y_val = rng.random((50, 8), dtype=np.float32), rng.integers(0, 2, 50)
        train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        train_dataset = train_dataset.shuffle(buffer_size=64).batch(batch_size)
        val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
        optimizer = keras.optimizers.Adam(1e-3)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss_value = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply(grads, model.trainable_weights)
            return loss_value

        for epoch in range(2):
            for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
                train_step(x_batch_train, y_batch_train)
            for x_batch_val, y_batch_val in val_dataset:
                model(x_batch_val, training=False)
        """),
        "train_step",
        None,
    ),
    "rnn_generate": (
        # The text-generation tutorial's OneStep model: states start as None, then the GRU state.
        _p("""
        import keras
        import tensorflow as tf


        class CharModel(keras.Model):
            def __init__(self):
                super().__init__()
                self.embedding = keras.layers.Embedding(20, 8)
                self.gru = keras.layers.GRU(16, return_sequences=True, return_state=True)
                self.dense = keras.layers.Dense(20)

            def call(self, inputs, states=None, return_state=False, training=False):
                x = self.embedding(inputs, training=training)
                if states is None:
                    states = self.gru.get_initial_state(tf.shape(x)[0])
                x, states = self.gru(x, initial_state=states, training=training)
                x = self.dense(x, training=training)
                return (x, states) if return_state else x


        class OneStep(keras.Model):
            def __init__(self, model):
                super().__init__()
                self.model = model

            @tf.function
            def generate_one_step(self, inputs, states=None):
                logits, states = self.model(inputs, states=states, return_state=True)
                predicted = tf.argmax(logits[:, -1, :], axis=-1, output_type=tf.int32)
                return predicted[:, None], states


        model = CharModel()
        model(tf.zeros([1, 3], tf.int32))
        one_step = OneStep(model)
        states = None
        next_char = tf.constant([[1, 2, 3]])
        for n in range(6):
            next_char, states = one_step.generate_one_step(next_char, states=states)
        """),
        "OneStep.generate_one_step",
        None,
    ),
    "variable_lists": (
        _example("variable_lists"),
        "decay",
        None,
    ),
    # The tensorflow/docs MLP guide's shape: a module called with three batch sizes, then saved
    # through an export wrapper that calls it with an open batch. The save traces the wrapper's
    # call, then every cached signature again; under an input_signature, once in all.
    "export_wrapper": (
        _p("""
        import tensorflow as tf

        class Net(tf.Module):
            def __init__(self):
                self.w = tf.Variable(tf.ones((4, 2)))

            @tf.function
            def __call__(self, x):
                return tf.matmul(x, self.w)

        class Export(tf.Module):
            def __init__(self, net):
                self.net = net

            @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
            def serve(self, x):
                return self.net(x)

        net = Net()
        for n in (16, 8, 5):
            print(float(tf.reduce_sum(net(tf.ones((n, 4))))))
        tf.saved_model.save(Export(net), "exported")
        """),
        "Net.__call__",
        None,
    ),
    # A few small inputs: tfretrace calls the model instead (model(x, training=False).numpy()).
    "keras_predict": (
        _example("keras_predict"),
        "keras:predict",
        None,
    ),
    # predict with a keyword calling the model has no counterpart for: padding, by hand.
    "keras_predict_pad": (
        _example("keras_predict").replace("verbose=0)", "verbose=0, callbacks=[])"),
        "keras:predict",
        _p("""
        import numpy as np
        import keras

        model = keras.Sequential([keras.Input((None, 4)), keras.layers.Dense(2)])
        for n, length in [(32, 5), (16, 9), (32, 5)]:
            x = np.ones((n, length, 4), dtype="float32")
            x_padded = np.pad(x, [(0, -x.shape[0] % 32), (0, 9 - x.shape[1]), (0, 0)])
            model.predict(x_padded, batch_size=32, verbose=0)[: x.shape[0]]
        """),
    ),
}


def _is_named(report: Any, name: str) -> bool:
    # "keras:<role>" picks Keras' own step by role: its name differs between Keras releases
    # (TensorFlowTrainer.make_predict_function... up to 3.15, Trainer... from 3.16).
    if name.startswith("keras:"):
        return bool(role_of(report) == name.removeprefix("keras:"))
    return bool(report.name == name)


def measure(folder: Path, name: str) -> tuple[int, dict[str, Any], tuple[int | None, int | None]]:
    """Run folder/prog.py under the monitor from inside folder: traces of ``name``, its report, the
    traces predicted with only the mechanical edits applied (the safe ones; with the unsafe ones)."""
    here, argv = os.getcwd(), sys.argv
    os.chdir(folder)
    sys.argv = ["prog.py"]  # the examples/wild programs parse theirs (--seed, --size): none given
    try:
        with tfretrace.watch(warn=False, log=False) as monitor:
            runpy.run_path("prog.py", run_name="__main__")
        session = monitor.session()
        found = [f for f in session.functions if _is_named(f, name)]
        applied = (predict_applied(found[0]), predict_applied(found[0], unsafe=True)) if found else (None, None)
    finally:
        os.chdir(here)
        sys.argv = argv
    if not found:
        return 0, {}, (None, None)
    return found[0].traces, found[0].to_dict(), applied


def main(out: Path) -> None:
    results: dict[str, Any] = {}
    only = sys.argv[2:]
    for key, (program, name, hand) in SCENARIOS.items():
        if only and key not in only:
            continue
        before_dir = out / key / "before"
        before_dir.mkdir(parents=True)
        (before_dir / "prog.py").write_text(program)
        traces, report, applied = measure(before_dir, name)
        plan = report.get("plan", [])
        edits = [
            Replacement(
                tfretrace.fix.core.source.Span(e["path"], e["line"], e["col"], e["end_line"], e["end_col"]), e["text"]
            )
            for step in plan
            for e in step["edits"]
        ]
        after_dir = out / key / "after"
        after_dir.mkdir()
        edited = hand if hand is not None else apply_edits(program, edits)
        (after_dir / "prog.py").write_text(edited)
        measured, _, _ = measure(after_dir, AFTER_NAMES.get(key, name))
        results[key] = {
            "traces": traces,
            "plan": plan,
            "measured": measured,
            "edited": edited,
            "main_cause": report.get("main_cause"),
            "applied_only": applied[0],
            "applied_unsafe": applied[1],
            "report": report,  # as recorded, with the folder its paths start from
            "folder": str(before_dir),
        }
    (out / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
