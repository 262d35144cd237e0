"""A Keras model predicted in one function; another function's `model` is an object of another class with a predict."""
import sys

import keras
import numpy as np

data = np.random.default_rng(2).random((100, 4)).astype("float32")


class Scorer:
    def predict(self, x):
        return round(float(x.sum()), 4)


def keras_part(rows):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    for n in rows:
        print("k_same_name", n, np.round(model.predict(data[:n], verbose=0), 4).tolist())


def score_part():
    model = Scorer()
    print("k_same_name score", model.predict(data[:7]))


keras_part([int(n) for n in sys.argv[1:]] or [100, 5])
score_part()
