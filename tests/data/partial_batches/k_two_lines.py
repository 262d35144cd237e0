"""Keras predict at two lines of one model: many rows (a partial last batch), then fewer rows at another line.

The second line's calls are served by the relaxed trace the first line's partial batch made, so the run
records no trace there; padding only the first line would leave the second one to trace its own.
"""
import sys

import keras
import numpy as np

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
train, test = [int(n) for n in sys.argv[1:]] or [100, 53]
rng = np.random.default_rng(0)
seen = rng.random((train, 6)).astype("float32")
fresh = rng.random((test, 6)).astype("float32")
scores = model.predict(seen, verbose=0)
print("k_two_lines", train, scores.shape, scores.round(5).tolist())
tested = model.predict(fresh, verbose=0)
print("k_two_lines", test, tested.shape, tested.round(5).tolist())
