"""Held-out: a Keras MNIST classifier trained by a hand-written tf.function loop (keras-io guide).

Source: keras-team/keras-io, guides/writing_a_custom_training_loop_in_tensorflow.py at commit
1806537c4333fbff1f9fd038b78179beeda480fb (fchollet). License: Apache-2.0.
Reduced: synthetic 784-pixel "digits" (--size training examples, a fifth as many for validation)
instead of the MNIST download; the guide's eager loops, its activity-regularization section (a
second `train_step` never called) and its GAN section left out; a log line every 10 steps instead of
100; no timings. Kept: the guide's model, Adam, `from_logits` loss and accuracy metrics,
`shuffle(1024).batch(32)` datasets without `drop_remainder`, and the `@tf.function` `train_step(x, y)`
and `test_step(x, y)` called on every batch of two epochs, the last one of each dataset shorter.
"""

import argparse
import os

os.environ["KERAS_BACKEND"] = "tensorflow"

import keras
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=1000, help="training examples")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)


def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    return keras.Model(inputs=inputs, outputs=outputs)


def synthetic_digits(n, rng):
    """Uint8 images whose class shows as a brighter band of pixels, so the model can learn it."""
    labels = rng.integers(0, 10, size=n).astype("uint8")
    images = rng.integers(0, 128, size=(n, 784)).astype("uint8")
    for i, label in enumerate(labels.tolist()):
        images[i, label * 78:(label + 1) * 78] += 120
    return images, labels


rng = np.random.default_rng(args.seed)
x_train, y_train = synthetic_digits(args.size + args.size // 5, rng)
batch_size = 32

# Reserve a fifth of the samples for validation.
x_val = x_train[-(args.size // 5):]
y_val = y_train[-(args.size // 5):]
x_train = x_train[:args.size]
y_train = y_train[:args.size]

train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_dataset = train_dataset.shuffle(buffer_size=1024).batch(batch_size)
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val))
val_dataset = val_dataset.batch(batch_size)

model = get_model()
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


epochs = 2
for epoch in range(epochs):
    print(f"\nStart of epoch {epoch}")
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        loss_value = train_step(x_batch_train, y_batch_train)
        if step % 10 == 0:
            print(f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}")
            print(f"Seen so far: {(step + 1) * batch_size} samples")

    train_acc = train_acc_metric.result()
    print(f"Training acc over epoch: {float(train_acc):.4f}")
    train_acc_metric.reset_state()

    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)
    val_acc = val_acc_metric.result()
    val_acc_metric.reset_state()
    print(f"Validation acc: {float(val_acc):.4f}")
