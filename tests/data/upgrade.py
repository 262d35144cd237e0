"""The same program under two TensorFlow/Keras versions (tests/data/upgrade_*.json)."""
import numpy as np
import tensorflow as tf


@tf.function
def step(x, scale):
    return x * scale


for scale in (1, 2):
    step(tf.ones([2]), scale)
model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(np.ones((10, 4), "float32"), np.ones((10, 1), "float32"), batch_size=4, epochs=1, verbose=0)
for n in (3, 5):
    model.predict(np.ones((n, 4), "float32"), verbose=0)
