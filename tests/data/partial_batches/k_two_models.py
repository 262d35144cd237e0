"""Two Keras models predicted at one line: a plain one, and one whose custom layer centres each batch on its mean."""
import sys

import keras
import numpy as np


class Centre(keras.layers.Layer):
    def call(self, x):
        return x - keras.ops.mean(x, axis=0, keepdims=True)


keras.utils.set_random_seed(0)
models = [
    ("plain", keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])),
    ("centred", keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), Centre(), keras.layers.Dense(2)])),
]
rows = [int(n) for n in sys.argv[1:]] or [100, 5]
data = np.random.default_rng(2).random((max(rows), 4)).astype("float32")
for n in rows:
    for name, model in models:
        print("k_two_models", name, n, np.round(model.predict(data[:n], verbose=0), 4).tolist())
