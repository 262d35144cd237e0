"""Keras predict of a float32 tensor (a tf.linspace grid), many rows then a few: padded as NumPy rows are."""
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
rows = [int(n) for n in sys.argv[1:]] or [100, 5]
for n in rows:
    grid = tf.reshape(tf.linspace(0.0, 10.0, n), (n, 1))
    print("k_tensor_rows", n, np.round(model.predict(grid, verbose=0), 4).tolist())
