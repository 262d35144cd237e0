"""Held-out: the "TensorFlow 2 quickstart for experts" custom training loop (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/quickstart/advanced.ipynb at commit
023b91c89dc06b3c6462d8426cc655acd452282e. License: Apache-2.0.
Reduced: --size synthetic 28x28 images and labels (MNIST's shapes) instead of the download, a test
set of a sixth of that (MNIST's 60000/10000: the default 1024 divides by the batch of 32, its test
set does not), a Conv2D of 8 filters and a Dense of 32 instead of 32 and 128, 2 epochs instead of 5,
Keras 3's `reset_state`. Kept: the subclassed `MyModel`, the `@tf.function`
`train_step(images, labels)` and `test_step(images, labels)` fed by `shuffle(...).batch(32)` and
`batch(32)` datasets without `drop_remainder`, the metric objects called inside the steps, and the
epoch loop as written.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=1024, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)
x_train = rng.integers(0, 256, (args.size, 28, 28)).astype(np.float64)
y_train = rng.integers(0, 10, args.size).astype(np.uint8)
x_test = rng.integers(0, 256, (args.size // 6, 28, 28)).astype(np.float64)
y_test = rng.integers(0, 10, args.size // 6).astype(np.uint8)
x_train, x_test = x_train / 255.0, x_test / 255.0

# Add a channels dimension
x_train = x_train[..., tf.newaxis].astype("float32")
x_test = x_test[..., tf.newaxis].astype("float32")

train_ds = tf.data.Dataset.from_tensor_slices(
    (x_train, y_train)).shuffle(10000, seed=args.seed).batch(32)

test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)


class MyModel(Model):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(8, 3, activation="relu")
        self.flatten = Flatten()
        self.d1 = Dense(32, activation="relu")
        self.d2 = Dense(10)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


# Create an instance of the model
model = MyModel()

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

optimizer = tf.keras.optimizers.Adam()

train_loss = tf.keras.metrics.Mean(name="train_loss")
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

test_loss = tf.keras.metrics.Mean(name="test_loss")
test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        # training=True is only needed if there are layers with different
        # behavior during training versus inference (e.g. Dropout).
        predictions = model(images, training=True)
        loss = loss_object(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    train_loss(loss)
    train_accuracy(labels, predictions)


@tf.function
def test_step(images, labels):
    # training=False is only needed if there are layers with different
    # behavior during training versus inference (e.g. Dropout).
    predictions = model(images, training=False)
    t_loss = loss_object(labels, predictions)

    test_loss(t_loss)
    test_accuracy(labels, predictions)


EPOCHS = 2

for epoch in range(EPOCHS):
    # Reset the metrics at the start of the next epoch
    train_loss.reset_state()
    train_accuracy.reset_state()
    test_loss.reset_state()
    test_accuracy.reset_state()

    for images, labels in train_ds:
        train_step(images, labels)

    for test_images, test_labels in test_ds:
        test_step(test_images, test_labels)

    print(f"Epoch {epoch + 1}, Loss: {float(train_loss.result()):.4f}, "
          f"Accuracy: {float(train_accuracy.result()) * 100:.2f}, "
          f"Test Loss: {float(test_loss.result()):.4f}, "
          f"Test Accuracy: {float(test_accuracy.result()) * 100:.2f}")
