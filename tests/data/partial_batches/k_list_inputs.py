"""Keras predict of a functional model of a list of two inputs calling a subclassed model and a Lambda."""
import sys

import keras
import numpy as np


class Body(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(3)

    def call(self, x):
        return self.dense(x)


keras.utils.set_random_seed(0)
a, b = keras.Input((4,)), keras.Input((2,))
body = Body()
joined = keras.layers.Concatenate()([body(a), keras.layers.Lambda(lambda t: t * 3.0)(b)])
model = keras.Model([a, b], keras.layers.Dense(2)(joined))
rows = [int(n) for n in sys.argv[1:]] or [100, 5]
rng = np.random.default_rng(2)
left, right = rng.random((max(rows), 4)).astype("float32"), rng.random((max(rows), 2)).astype("float32")
for n in rows:
    print("k_list_inputs", n, np.round(model.predict([left[:n], right[:n]], verbose=0), 4).tolist())
