"""Keras predict of a two-input (dict), two-output model, batch_size=16: 40 rows, then 3."""
import sys

import keras
import numpy as np

keras.utils.set_random_seed(0)
a = keras.Input((5,), name="a")
b = keras.Input((3,), name="b")
hidden = keras.layers.Concatenate()([keras.layers.Dense(8, activation="relu")(a), b])
model = keras.Model(
    {"a": a, "b": b},
    [keras.layers.Dense(2, name="scores")(hidden), keras.layers.Dense(1, activation="sigmoid", name="gate")(hidden)],
)
rows = [int(n) for n in sys.argv[1:]] or [40, 3]
rng = np.random.default_rng(1)
first, second = rng.random((max(rows), 5)), rng.random((max(rows), 3))
for n in rows:
    scores, gate = model.predict({"a": first[:n], "b": second[:n]}, batch_size=16, verbose=0)
    print("k_multi", n, scores.tolist(), gate.tolist())
