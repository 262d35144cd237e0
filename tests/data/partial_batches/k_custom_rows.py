"""Keras predict of a subclassed model with a custom layer and a dict of two inputs: its rows are independent."""
import sys

import keras
import numpy as np


class Squash(keras.layers.Layer):
    def call(self, x):
        return keras.ops.tanh(x * 2.0 + 1.0)


class Twin(keras.Model):
    def __init__(self):
        super().__init__()
        self.left = keras.layers.Dense(3)
        self.squash = Squash()
        self.out = keras.layers.Dense(2)

    def call(self, inputs):
        both = keras.ops.concatenate([self.left(inputs["left"]), self.squash(inputs["right"])], axis=-1)
        return self.out(both)


keras.utils.set_random_seed(0)
model = Twin()
rows = [int(n) for n in sys.argv[1:]] or [100, 5]
rng = np.random.default_rng(2)
data = {"left": rng.random((max(rows), 4)).astype("float32"), "right": rng.random((max(rows), 2)).astype("float32")}
for n in rows:
    x = {key: value[:n] for key, value in data.items()}
    print("k_custom_rows", n, np.round(model.predict(x, verbose=0), 4).tolist())
