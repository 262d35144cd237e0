"""XLA scenarios on real TensorFlow, run in one subprocess by tests/test_xla.py (not a test module).

The caller asks TensorFlow for its per-compile count lines itself, so those pass through to
stderr, where the test counts them independently; tfretrace adds the per-argument lines and must
swallow them. The program writes awkward bytes to stderr twice, which must come out unchanged.
Prints one JSON line: per function, the session's report.
"""

from __future__ import annotations

import json
import os
import sys

import tfretrace

mon = tfretrace.install(warn=False, log=False)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from xla_scenarios_bytes import USER_BYTES  # noqa: E402


def user_writes() -> None:
    for chunk in USER_BYTES:
        os.write(2, chunk)


@tf.function(jit_compile=True)
def plain(x):
    return tf.reduce_sum(x * 2.0)


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, 4], tf.float32)])
def open_batch(x):
    return tf.reduce_mean(x, axis=0)


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.float32)])
def many(x):
    return x + 1.0


@tf.function
def no_xla(x):
    return x * 3.0


user_writes()

# A plain jit_compile function: shapes 3, 3, 5: two traces, one compile each.
for n in (3, 3, 5):
    plain(tf.ones([n]))
# input_signature with a None batch dimension: one trace, a compile per new batch size.
for n in (2, 3, 2, 4):
    open_batch(tf.ones([n, 4]))
# Traced once, compiled 12 times with 12 calls: megamorphic.
for n in range(1, 13):
    many(tf.ones([n]))
# Without XLA nothing is compiled.
for n in (2, 3):
    no_xla(tf.ones([n]))

user_writes()

import keras  # noqa: E402

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse", jit_compile=True)
for n in (32, 16, 20, 24, 28, 16, 33):
    model.predict_on_batch(np.ones((n, 8), "float32"))
# 50 samples in batches of 16: 16, 16, 16, 2 (a ragged last batch).
model.fit(np.ones((50, 8), "float32"), np.ones((50, 1), "float32"), batch_size=16, epochs=2, verbose=0)

# Budgets on XLA compiles: a block, a decorator, the pytest marker's watch, the Keras callback.
budgets = {}


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.float32)])
def in_block(x):
    return x * 2.0


try:
    with tfretrace.budget(in_block, max_traces=None, max_xla_compiles=2):
        for n in (1, 2, 3):
            in_block(tf.ones([n]))
except tfretrace.RetraceError as exc:
    budgets["block"] = [exc.cause, exc.count]


@tfretrace.budget(max_traces=None, max_xla_compiles=1)
@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.float32)])
def decorated(x):
    return x * 4.0


for n in (1, 2, 3, 4):
    try:
        decorated(tf.ones([n]))
    except tfretrace.RetraceError as exc:
        # The compile is read from the log after the call: this call or the next one raises.
        budgets["decorator"] = [exc.cause, exc.count, n]
        break


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.float32)])
def in_test(x):
    return x - 1.0


from tfretrace.integrations.pytest_support import TestWatch  # noqa: E402

watch = TestWatch(None, ["in_test"], max_xla_compiles=1).start()
watch.arm()
for n in (1, 2):
    in_test(tf.ones([n]))
watch.disarm()
breach = watch.unraised()
watch.stop()
budgets["marker"] = None if breach is None else [breach.cause, breach.count]
budgets["marker_summary"] = watch.summary_lines()

from tfretrace.keras import RetraceCallback  # noqa: E402

model2 = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
model2.compile(optimizer="sgd", loss="mse", jit_compile=True)
try:
    model2.fit(np.ones((50, 8), "float32"), np.ones((50, 1), "float32"), batch_size=16, epochs=1, verbose=0,
               callbacks=[RetraceCallback(max_xla_compiles=1)])
except tfretrace.RetraceError as exc:
    budgets["keras"] = [exc.cause, str(exc).splitlines()[0]]

session = tfretrace.stop()
sys.stderr.flush()
from keras_roles import tf_counts  # noqa: E402

# TensorFlow's own trace counts behind each model's train function, to check the fit rows with.
models = {"sequential": model, "sequential_1": model2}
tf_train_traces = {name: sum(tf_counts(m, "train").values()) for name, m in models.items()}
out = {f.display_name(): f.to_dict() for f in session.functions}
print(json.dumps({"functions": out, "session": session.to_dict(), "notes": list(session.notes), "budgets": budgets,
                  "internal_errors": session.internal_errors, "keras2": keras.__version__.startswith("2."),
                  "tf_train_traces": tf_train_traces}))
