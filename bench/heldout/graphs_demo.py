"""Held-out: TensorBoard's graph-plugin demo, a Python step passed to two traced summaries (GitHub).

Source: tensorflow/tensorboard, tensorboard/plugins/graph/graphs_demo.py at commit
067d5defb2879de2369beda0d25f326506495ba3 (its `profile` loop reported by DLPerf as issue #6219 of
that repository; upstream's later fix, 827be0d867b7e86a0e16e04fbd0d029e97343a71 "Pass tensors instead
of python literals for graphs demo", is not applied here). License: Apache-2.0.
Reduced: the log folder is a temporary one instead of /tmp/graphs_demo; --size steps of the
profile loop instead of 3; `profiler_outdir` given to `trace_on` (TF 2.21 ignores it in
`trace_export`); the Keras demo seeded, with Keras 3 spellings (`Input(shape=(1,))` for
`input_dim=1`, `SGD(learning_rate=0.2)`, `losses.MSE` for `losses.mean_squared_error`), and its
final losses printed rounded (the original prints nothing there); no closing hint about
`tensorboard --logdir`; the log folder removed at exit. Kept: `write_graph` with its
`@tf.function f()` written by `tf.summary.graph`, `profile` with `@tf.function f(i)` and
`@tf.function g(i)` called with each Python int step between `tf.summary.trace_on` and
`tf.summary.trace_export` (the profiler on for `f`), and `keras` fitting with the TensorBoard
callback.
"""

import argparse
import atexit
import contextlib
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=3, help="steps of the profile loop")
args = parser.parse_args()
np.random.seed(args.seed)
tf.keras.utils.set_random_seed(args.seed)

# Directory into which to write the data for tensorboard to read.
LOGDIR = tempfile.mkdtemp(prefix="graphs_demo")
atexit.register(shutil.rmtree, LOGDIR, ignore_errors=True)


@contextlib.contextmanager
def _nullcontext():
    yield


def _silence_deprecation_warnings():
    """Best-effort silencing of TF deprecation warnings."""
    try:
        from tensorflow.python.util import deprecation

        return deprecation.silence()
    except (ImportError, AttributeError):
        return _nullcontext()


def write_graph():
    logdir = os.path.join(LOGDIR, "write_graph")

    @tf.function
    def f():
        x = tf.constant(2)
        y = tf.constant(3)
        return x ** y

    with tf.summary.create_file_writer(logdir).as_default():
        if hasattr(tf.summary, "graph"):
            tf.summary.graph(f.get_concrete_function().graph)
        else:
            print("Could not find tf.summary.graph(); use TF 2.5.0+ to run full demo")


def keras():
    logdir = os.path.join(LOGDIR, "keras")

    data_size = 1000
    train_fac = 0.8
    train_size = int(data_size * train_fac)
    x = np.linspace(-1, 1, data_size)
    np.random.shuffle(x)
    y = 0.5 * x + 2 + np.random.normal(0, 0.05, (data_size,))
    (x_train, y_train) = x[:train_size], y[:train_size]
    (x_test, y_test) = x[train_size:], y[train_size:]

    layers = [
        tf.keras.Input(shape=(1,)),
        tf.keras.layers.Dense(16),
        tf.keras.layers.Dense(1),
    ]
    model = tf.keras.models.Sequential(layers)
    model.compile(
        loss=tf.keras.losses.MSE,
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.2),
    )
    history = model.fit(
        x_train,
        y_train,
        batch_size=train_size,
        verbose=0,
        epochs=100,
        validation_data=(x_test, y_test),
        callbacks=[tf.keras.callbacks.TensorBoard(logdir)],
    )
    print("keras loss %.5f val_loss %.5f" % (history.history["loss"][-1], history.history["val_loss"][-1]))


def profile():
    logdir = os.path.join(LOGDIR, "profile")

    @tf.function
    def f(i):
        return tf.constant(i) + tf.constant(i)

    @tf.function
    def g(i):
        return tf.constant(i) * tf.constant(i)

    with tf.summary.create_file_writer(logdir).as_default():
        for step in range(args.size):
            with _silence_deprecation_warnings():
                tf.summary.trace_on(profiler=True, profiler_outdir=logdir)
                print(f(step).numpy())
                tf.summary.trace_export("prof_f", step=step)

                tf.summary.trace_on(profiler=False)
                print(g(step).numpy())
                tf.summary.trace_export("prof_g", step=step)


def main():
    write_graph()
    profile()
    keras()


if __name__ == "__main__":
    main()
