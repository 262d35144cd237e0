"""Held-out program in the style of the Keras guide "Save, serialize, and export models": train a
model, save it as .keras, load it twice (to resume training and to serve), and export a SavedModel
reloaded with tf.saved_model.load. Runs on the Keras tf.keras is (Keras 3, or tf-keras)."""

import os
import tempfile

import numpy as np
import tensorflow as tf

keras = tf.keras
rng = np.random.default_rng(0)
x = rng.random((256, 8), dtype=np.float32)
y = (x.sum(axis=1, keepdims=True) > 4).astype("float32")


def get_model():
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    outputs = keras.layers.Dense(1, activation="sigmoid")(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="binary_crossentropy")
    return model


folder = tempfile.mkdtemp()
model = get_model()
model.fit(x, y, epochs=2, batch_size=32, verbose=0)
path = os.path.join(folder, "model.keras")
model.save(path)

resumed = keras.models.load_model(path)  # resume training where it stopped
resumed.fit(x, y, epochs=1, batch_size=32, verbose=0)
served = keras.models.load_model(path)  # a second copy to serve predictions
np.testing.assert_allclose(served.predict(x[:64], verbose=0), model.predict(x[:64], verbose=0), atol=1e-6)

export = os.path.join(folder, "exported")
tf.saved_model.save(model, export)
restored = tf.saved_model.load(export)
print("restored", restored.signatures["serving_default"].structured_outputs.keys() if restored.signatures else "-")
print("done")
