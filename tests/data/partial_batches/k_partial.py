"""Keras predict on a partial last batch (100 rows), then a few rows (5), then many (64)."""
import sys

import keras
import numpy as np

keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input((8, 6)),
    keras.layers.Conv1D(16, 3, activation="relu"),
    keras.layers.BatchNormalization(),
    keras.layers.GlobalAveragePooling1D(),
    keras.layers.Dropout(0.5),
    keras.layers.Dense(3),
])
rows = [int(n) for n in sys.argv[1:]] or [100, 5, 64]
data = np.random.default_rng(0).random((max(rows), 8, 6)).astype("float32")
for n in rows:
    y = model.predict(data[:n], verbose=0)
    print("k_partial", n, y.shape, y.tolist())
