"""Held-out: custom training with tf.distribute.MirroredStrategy (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/distribute/custom_training.ipynb at commit
d742984f9a720404d095e83eca091749667c34cd. License: Apache-2.0.
Reduced: --size synthetic 28x28 images (Fashion-MNIST's shapes) instead of the download, two
logical CPUs standing in for two GPUs, 2 epochs per loop and 3 `next` steps instead of 10, a smaller
CNN, Keras 3 names (`reduction=None`, `reset_state`), and the model and optimizer built before the
first step, which Keras 3 needs under a strategy. Kept: `distributed_train_step` and
`distributed_test_step` fed a distributed dataset batched without `drop_remainder` (a partial last
batch), the restore into a model outside the strategy with its `eval_step`, the `iter`/`next` loop
and `distributed_train_epoch`.
"""

import argparse
import atexit
import contextlib
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=600, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

cpu = tf.config.list_physical_devices("CPU")[0]
with contextlib.suppress(RuntimeError):
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

rng = np.random.default_rng(args.seed)
train_images = rng.random((args.size, 28, 28, 1), dtype=np.float32)
train_labels = rng.integers(0, 10, args.size).astype(np.uint8)
test_images = rng.random((args.size // 5, 28, 28, 1), dtype=np.float32)
test_labels = rng.integers(0, 10, args.size // 5).astype(np.uint8)

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
print(f"Number of devices: {strategy.num_replicas_in_sync}")
BUFFER_SIZE = len(train_images)
BATCH_SIZE_PER_REPLICA = 64
GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
EPOCHS = 2

train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(
    BUFFER_SIZE, seed=args.seed).batch(GLOBAL_BATCH_SIZE)
test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(GLOBAL_BATCH_SIZE)
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset)


def create_model():
    regularizer = tf.keras.regularizers.L2(1e-5)
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, activation="relu", kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(16, activation="relu", kernel_regularizer=regularizer),
        tf.keras.layers.Dense(10, kernel_regularizer=regularizer),
    ])


checkpoint_dir = tempfile.mkdtemp(prefix="heldout-ckpt-")
atexit.register(shutil.rmtree, checkpoint_dir, True)
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")

with strategy.scope():
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def compute_loss(labels, predictions, model_losses):
        per_example_loss = loss_object(labels, predictions)
        loss = tf.nn.compute_average_loss(per_example_loss)
        if model_losses:
            loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
        return loss

    test_loss = tf.keras.metrics.Mean(name="test_loss")
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")
    model = create_model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
    # Keras 3 under MirroredStrategy: the optimizer's variables must exist before the first step.
    model.build((None, 28, 28, 1))
    optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = compute_loss(labels, predictions, model.losses)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_accuracy.update_state(labels, predictions)
    return loss


def test_step(inputs):
    images, labels = inputs
    predictions = model(images, training=False)
    test_loss.update_state(loss_object(labels, predictions))
    test_accuracy.update_state(labels, predictions)


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


@tf.function
def distributed_test_step(dataset_inputs):
    return strategy.run(test_step, args=(dataset_inputs,))


for epoch in range(EPOCHS):
    total_loss = 0.0
    num_batches = 0
    for x in train_dist_dataset:
        total_loss += distributed_train_step(x)
        num_batches += 1
    train_loss = total_loss / num_batches
    for x in test_dist_dataset:
        distributed_test_step(x)
    if epoch % 2 == 0:
        checkpoint.save(checkpoint_prefix)
    print(f"Epoch {epoch + 1}, Loss: {float(train_loss):.4f}, Accuracy: {float(train_accuracy.result()) * 100:.2f}, "
          f"Test Loss: {float(test_loss.result()):.4f}, Test Accuracy: {float(test_accuracy.result()) * 100:.2f}")
    test_loss.reset_state()
    train_accuracy.reset_state()
    test_accuracy.reset_state()

eval_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="eval_accuracy")
new_model = create_model()
new_optimizer = tf.keras.optimizers.Adam()
test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(GLOBAL_BATCH_SIZE)


@tf.function
def eval_step(images, labels):
    predictions = new_model(images, training=False)
    eval_accuracy(labels, predictions)


checkpoint = tf.train.Checkpoint(optimizer=new_optimizer, model=new_model)
checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))
for images, labels in test_dataset:
    eval_step(images, labels)
print(f"Accuracy after restoring without strategy: {float(eval_accuracy.result()) * 100:.2f}")

for _ in range(EPOCHS):
    total_loss = 0.0
    num_batches = 0
    train_iter = iter(train_dist_dataset)
    for _ in range(3):
        total_loss += distributed_train_step(next(train_iter))
        num_batches += 1
    average_train_loss = total_loss / num_batches
    print(f"Epoch {epoch + 1}, Loss: {float(average_train_loss):.4f}, "
          f"Accuracy: {float(train_accuracy.result()) * 100:.2f}")
    train_accuracy.reset_state()


@tf.function
def distributed_train_epoch(dataset):
    total_loss = 0.0
    num_batches = 0
    for x in dataset:
        per_replica_losses = strategy.run(train_step, args=(x,))
        total_loss += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)
        num_batches += 1
    return total_loss / tf.cast(num_batches, dtype=tf.float32)


for epoch in range(EPOCHS):
    train_loss = distributed_train_epoch(train_dist_dataset)
    print(f"Epoch {epoch + 1}, Loss: {float(train_loss):.4f}, Accuracy: {float(train_accuracy.result()) * 100:.2f}")
    train_accuracy.reset_state()
