"""Keras predict of a Sequential model on a few rows whose count and length vary: as model(x), it traces nothing."""
import sys

import keras
import numpy as np

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((None, 4)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)])
rng = np.random.default_rng(3)
requests = [(int(n), 5 + i) for i, n in enumerate(sys.argv[1:])] or [(12, 5), (7, 9), (12, 5)]
for n, length in requests:
    x = rng.random((n, length, 4)).astype("float32")
    y = model.predict(x, verbose=0)
    print("k_call_rows", n, length, y.shape, repr(float(y.sum())), y[0, 0].tolist())
