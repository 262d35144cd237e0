"""Held-out: RFI segmentation of radio spectrograms, one tf.function step given the epoch (GitHub).

Source: CharlDuToit/RFI-NLN, utils/training/train_steps.py (`train_step`, `add_model_regularizer_loss`)
at commit 7e59c688652af6594be5a618fb76552f99746ccf, utils/training/fit_fcn.py (`fit_fcn_train_val`,
`calc_loss`) at 4a2c8671698ebc4507da318f8fef055d826afc3d and utils/data/batcher.py (`batch`).
License: MIT.
Reduced: synthetic 32x32 spectrograms with RFI lines as masks (--size training images, a quarter as
many for validation) instead of the HERA/LOFAR files; a small L2-regularized convolutional net
instead of the repository's UNet family; 3 epochs; no checkpoints, saved losses, images, plots,
early stop or timings. Keras 3 spellings: `Adam(learning_rate=...)` and
`optimizer.learning_rate.assign(lr)` for `Adam(lr=...)` and `tf.keras.backend.set_value(optimizer.lr,
lr)`. Kept: the `@tf.function` `train_step(model, x, y, loss_func, optimizer, init_lr=..., epochs=...,
epoch=..., lindecay=...)` called per batch with the model, loss, optimizer and the Python ints and
floats of the schedule, the training data cut into 5 intervals of whole batches (the last one
shorter) batched by `tf.data` without `drop_remainder`, and the eager loss over the batches.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow import losses, optimizers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=160, help="training spectrograms")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)


def add_model_regularizer_loss(model):
    loss = 0
    for layer in model.layers:
        if hasattr(layer, "kernel_regularizer") and layer.kernel_regularizer and hasattr(layer, "kernel"):
            loss += layer.kernel_regularizer(layer.kernel)
        if hasattr(layer, "bias_regularizer") and layer.bias_regularizer:
            loss += layer.bias_regularizer(layer.bias)
    return loss


@tf.function
def train_step(model, x, y, loss_func, optimizer, init_lr=1e-4, epochs=100, epoch=0, lindecay=1.0):
    """Executes one training step and returns the loss."""
    with tf.GradientTape() as tape:
        x_hat = model(x, training=True)
        func_loss = loss_func(x_hat, y)
        total_loss = func_loss + add_model_regularizer_loss(model)
    gradients = tape.gradient(total_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    r = 1 - epoch * (1 - lindecay) / epochs
    lr = init_lr * r
    optimizer.learning_rate.assign(lr)
    # Only return loss function loss, but optimize with total loss
    return func_loss


def batch(batch_size, *arrays):
    out = [tf.data.Dataset.from_tensor_slices(a).batch(batch_size) for a in arrays]
    return tuple(out) if len(out) > 1 else out[0]


def calc_loss(model, data_batches, masks_batches, loss_func):
    tot_loss = 0.0
    n_obs = 0
    for data_batch, mask_batch in zip(data_batches, masks_batches):
        x_hat = model(data_batch, training=False)
        loss = loss_func(x_hat, mask_batch)
        tot_loss += loss * len(data_batch)
        n_obs += len(data_batch)
    return (tot_loss / n_obs).numpy()


def fit_fcn_train_val(model, train_data, train_masks, val_data, val_masks, lr, epochs, loss_func,
                      lr_lin_decay=1.0, batch_size=64):
    optimizer = optimizers.Adam(learning_rate=lr)
    train_losses, val_losses = [], []
    # intervals to split training data into to save memory
    n_total_train = len(train_data)
    n_train_splits = 5
    interval_length = int((n_total_train // (n_train_splits * batch_size)) * batch_size)
    interval_length = np.maximum(interval_length, batch_size)
    interval_length = np.minimum(interval_length, n_total_train)
    n_train_splits = int(np.ceil(n_total_train / interval_length))
    intervals = []
    for i in range(n_train_splits):
        end = n_total_train if i == n_train_splits - 1 else interval_length * (i + 1)
        intervals.append((interval_length * i, end))
    val_data_batches, val_masks_batches = batch(batch_size, val_data, val_masks)

    for epoch in range(epochs):
        total_train_loss = 0
        for inter in intervals:
            n_int = inter[1] - inter[0]
            train_data_batches, train_masks_batches = batch(
                batch_size, train_data[inter[0]:inter[1], ...], train_masks[inter[0]:inter[1], ...])
            for data_batch, mask_batch in zip(train_data_batches, train_masks_batches):
                train_step(model, data_batch, mask_batch, loss_func, optimizer, init_lr=lr, epochs=epochs,
                           epoch=epoch, lindecay=lr_lin_decay)
            train_loss = calc_loss(model, train_data_batches, train_masks_batches, loss_func)
            total_train_loss += train_loss * n_int
        total_train_loss /= n_total_train
        train_losses.append(total_train_loss)
        val_loss = calc_loss(model, val_data_batches, val_masks_batches, loss_func)
        val_losses.append(val_loss)
        print(f"epoch {epoch}: train loss {total_train_loss:.5f}, val loss {val_loss:.5f}")
    return train_losses[int(np.argmin(val_losses))], float(np.min(val_losses))


def spectrograms(n, rng):
    """Noise with bright horizontal (narrow-band) and vertical (broadband) RFI lines, and their masks."""
    masks = np.zeros((n, 32, 32, 1), dtype="float32")
    for m in masks:
        m[rng.integers(0, 32, size=2), :, 0] = 1.0
        m[:, rng.integers(0, 32, size=1), 0] = 1.0
    data = np.abs(rng.normal(0.2, 0.1, size=masks.shape)).astype("float32") + 0.6 * masks
    return np.clip(data, 0.0, 1.0), masks


def conv_net(reg=1e-6):
    l2 = tf.keras.regularizers.l2(reg)
    inputs = tf.keras.Input(shape=(32, 32, 1))
    x = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", kernel_regularizer=l2)(inputs)
    x = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", kernel_regularizer=l2)(x)
    outputs = tf.keras.layers.Conv2D(1, 1, activation="sigmoid", kernel_regularizer=l2)(x)
    return tf.keras.Model(inputs, outputs)


rng = np.random.default_rng(args.seed)
train_data, train_masks = spectrograms(args.size, rng)
val_data, val_masks = spectrograms(max(args.size // 4, 1), rng)
model = conv_net()
train_loss, val_loss = fit_fcn_train_val(model, train_data, train_masks, val_data, val_masks, lr=1e-3,
                                         epochs=3, loss_func=losses.BinaryCrossentropy())
print(f"best epoch: train loss {train_loss:.5f}, val loss {val_loss:.5f}")
