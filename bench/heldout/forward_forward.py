"""Held-out: Hinton's Forward-Forward training of dense layers, labels overlaid per class (keras-io).

Source: keras-team/keras-io, examples/vision/forwardforward.py at commit
0dbbfff29edec38700ae9ae12c3fa9eb298bc3ae (Suvaditya Mukherjee). License: Apache-2.0.
Reduced: synthetic 28x28 "digits" in [0, 1] (--size training images in one batch, a sixth as many
for testing) instead of the MNIST download, with the top-left 10 pixels zero as in MNIST; layers of
64 units instead of 500, 5 forward-forward epochs per layer instead of 50, 3 `fit` epochs instead of
250, `fit(verbose=0)` with the loss history printed instead of the progress bar, no plots. Keras 3:
an Adam per layer instead of one shared by the layers (a Keras 3 optimizer serves only the variables
it was built with; Keras 2's made each variable's slots when first seen, so only the step counter
was shared), and no `metrics=[keras.metrics.Mean()]` in `compile` (Keras 3 refuses to report a
compiled metric `train_step` never updates).
Kept: `FFDense.forward_forward`, the `@tf.function(reduce_retracing=True)` methods `overlay_y_on_x`
and `predict_one_sample` (which calls `overlay_y_on_x` with each class index 0..9 as a Python int),
the `@tf.function(jit_compile=True)` `train_step` run by `fit`, which maps `overlay_y_on_x` over the
batch, and the overridden `predict` mapping `predict_one_sample` over the test images.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.compiler.tf2xla.python import xla

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=600, help="training images")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)


class FFDense(keras.layers.Layer):
    """A Forward-Forward Dense layer: it trains itself on positive and negative samples."""

    def __init__(self, units, optimizer, loss_metric, num_epochs=5, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(units=units)
        self.relu = keras.layers.ReLU()
        self.optimizer = optimizer
        self.loss_metric = loss_metric
        self.threshold = 1.5
        self.num_epochs = num_epochs

    def call(self, x):
        x_norm = tf.norm(x, ord=2, axis=1, keepdims=True)
        x_norm = x_norm + 1e-4
        x_dir = x / x_norm
        res = self.dense(x_dir)
        return self.relu(res)

    def forward_forward(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            with tf.GradientTape() as tape:
                g_pos = tf.math.reduce_mean(tf.math.pow(self.call(x_pos), 2), 1)
                g_neg = tf.math.reduce_mean(tf.math.pow(self.call(x_neg), 2), 1)
                loss = tf.math.log(1 + tf.math.exp(tf.concat([-g_pos + self.threshold, g_neg - self.threshold], 0)))
                mean_loss = tf.cast(tf.math.reduce_mean(loss), tf.float32)
                self.loss_metric.update_state([mean_loss])
            gradients = tape.gradient(mean_loss, self.dense.trainable_weights)
            self.optimizer.apply_gradients(zip(gradients, self.dense.trainable_weights))
        return tf.stop_gradient(self.call(x_pos)), tf.stop_gradient(self.call(x_neg)), self.loss_metric.result()


class FFNetwork(keras.Model):
    """A model of FFDense layers that trains each layer locally and predicts by per-label goodness."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.loss_var = tf.Variable(0.0, trainable=False, dtype=tf.float32)
        self.loss_count = tf.Variable(0.0, trainable=False, dtype=tf.float32)
        self.layer_list = [keras.Input(shape=(dims[0],))]
        for d in range(len(dims) - 1):
            self.layer_list += [FFDense(dims[d + 1], optimizer=keras.optimizers.Adam(learning_rate=0.03),
                                        loss_metric=keras.metrics.Mean())]

    # Puts a one-hot of the label, scaled to the image's maximum, in the image's first 10 pixels.
    @tf.function(reduce_retracing=True)
    def overlay_y_on_x(self, data):
        X_sample, y_sample = data
        max_sample = tf.reduce_max(X_sample, axis=0, keepdims=True)
        max_sample = tf.cast(max_sample, dtype=tf.float64)
        X_zeros = tf.zeros([10], dtype=tf.float64)
        X_update = xla.dynamic_update_slice(X_zeros, max_sample, [y_sample])
        X_sample = xla.dynamic_update_slice(X_sample, X_update, [0])
        return X_sample, y_sample

    @tf.function(reduce_retracing=True)
    def predict_one_sample(self, x):
        goodness_per_label = []
        x = tf.reshape(x, [tf.shape(x)[0] * tf.shape(x)[1]])
        for label in range(10):
            h, label = self.overlay_y_on_x(data=(x, label))
            h = tf.reshape(h, [-1, tf.shape(h)[0]])
            goodness = []
            for layer_idx in range(1, len(self.layer_list)):
                layer = self.layer_list[layer_idx]
                h = layer(h)
                goodness += [tf.math.reduce_mean(tf.math.pow(h, 2), 1)]
            goodness_per_label += [tf.expand_dims(tf.reduce_sum(goodness, keepdims=True), 1)]
        goodness_per_label = tf.concat(goodness_per_label, 1)
        return tf.cast(tf.argmax(goodness_per_label, 1), tf.float64)

    def predict(self, data):
        x = data
        preds = tf.map_fn(fn=self.predict_one_sample, elems=x)
        return np.asarray(preds, dtype=int)

    @tf.function(jit_compile=True)
    def train_step(self, data):
        x, y = data
        x = tf.reshape(x, [-1, tf.shape(x)[1] * tf.shape(x)[2]])
        x_pos, y = tf.map_fn(fn=self.overlay_y_on_x, elems=(x, y))
        random_y = tf.random.shuffle(y)
        x_neg, y = tf.map_fn(fn=self.overlay_y_on_x, elems=(x, random_y))
        h_pos, h_neg = x_pos, x_neg
        for idx, layer in enumerate(self.layers):
            if isinstance(layer, FFDense):
                print(f"Training layer {idx+1} now : ")
                h_pos, h_neg, loss = layer.forward_forward(h_pos, h_neg)
                self.loss_var.assign_add(loss)
                self.loss_count.assign_add(1.0)
            else:
                print(f"Passing layer {idx+1} now : ")
                x = layer(x)
        mean_res = tf.math.divide(self.loss_var, self.loss_count)
        return {"FinalLoss": mean_res}


def synthetic_digits(n, rng):
    """MNIST-like uint8 images: a bright bar per class, top-left 10 pixels left at zero."""
    y = rng.integers(0, 10, size=n)
    x = rng.integers(0, 60, size=(n, 28, 28)).astype("uint8")
    for i, label in enumerate(y.tolist()):
        x[i, 4 + 2 * label:6 + 2 * label, 4:24] = 230
    x[:, 0, :10] = 0
    return x, y


rng = np.random.default_rng(args.seed)
x_train, y_train = synthetic_digits(args.size, rng)
x_test, y_test = synthetic_digits(max(args.size // 6, 1), rng)
x_train = x_train.astype(float) / 255
x_test = x_test.astype(float) / 255
y_train = y_train.astype(int)
y_test = y_test.astype(int)

train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(len(x_train))

model = FFNetwork(dims=[784, 64, 64])
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.03), loss="mse", jit_compile=True)
history = model.fit(train_dataset, epochs=3, verbose=0)
print("FinalLoss per epoch:", " ".join(f"{v:.4f}" for v in history.history["FinalLoss"]))

preds = model.predict(tf.convert_to_tensor(x_test))
preds = preds.reshape((preds.shape[0], preds.shape[1]))
print(f"Test Accuracy score : {100 * float(np.mean(preds[:, 0] == y_test)):.2f}%")
