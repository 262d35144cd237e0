"""Held-out program in the style of the Keras guide "Working with preprocessing layers" (tf-keras,
Keras 2): Normalization, StringLookup and TextVectorization adapted to data, one layer per feature,
then a small model trained on the preprocessed features. Needs tf-keras."""

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # TensorFlow's switch to Keras 2, set before it loads

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

rng = np.random.default_rng(0)
numeric = {name: rng.normal(size=(200, 1)).astype("float32") for name in ("age", "income", "hours")}
cities = np.array([["paris"], ["tokyo"], ["lima"], ["oslo"]] * 50)
texts = np.array(["the cat sat", "a dog ran far", "the bird flew off", "cats and dogs"] * 50)

normalizers = {}
for name, values in numeric.items():  # one Normalization per numeric feature
    norm = layers.Normalization()
    norm.adapt(values)
    normalizers[name] = norm
lookup = layers.StringLookup(output_mode="one_hot")
lookup.adapt(cities)
vectorize = layers.TextVectorization(max_tokens=20, output_mode="multi_hot")
vectorize.adapt(texts)

features = tf.concat(
    [normalizers[n](v) for n, v in numeric.items()] + [lookup(cities), vectorize(texts)], axis=1
)
labels = rng.integers(0, 2, size=(200, 1)).astype("float32")
model = keras.Sequential([layers.Dense(8, activation="relu"), layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy")
model.fit(features.numpy(), labels, epochs=2, batch_size=32, verbose=0)
print("loss", round(float(model.evaluate(features.numpy(), labels, verbose=0)), 3))
