"""Two tf.Module methods whose variables exist before the first call: a decorated __call__ and tf.function(self._step).

Each is called with three batch sizes. It prints rounded results, then TensorFlow's own trace
count of each function (on stderr).
"""

import sys

import tensorflow as tf


class Scale(tf.Module):
    def __init__(self):
        self.w = tf.Variable(tf.reshape(tf.range(24, dtype=tf.float32), (8, 3)) / 10.0)

    @tf.function
    def __call__(self, x):
        return tf.matmul(x, self.w)


class Trainer(tf.Module):
    def __init__(self, model):
        self.model = model
        self.step = tf.function(self._step)

    def _step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self.model(x)[:, 0] - y) ** 2)
        grads = tape.gradient(loss, self.model.trainable_variables)
        for g, v in zip(grads, self.model.trainable_variables):
            v.assign_sub(0.01 * g)
        return loss


scale = Scale()
trainer = Trainer(Scale())
for n in (16, 8, 5):
    x = tf.reshape(tf.range(n * 8, dtype=tf.float32), (n, 8)) / 100.0
    print("methods", n, round(float(tf.reduce_sum(scale(x))), 4), round(float(trainer.step(x, tf.ones((n,)))), 4))
counts = [f.experimental_get_tracing_count() for f in (scale.__call__, trainer.step, trainer.model.__call__)]
print("methods traces", *counts, file=sys.stderr)
