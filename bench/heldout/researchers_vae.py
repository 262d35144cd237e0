"""Held-out: a VAE of nested Keras layers trained by a tf.function step (keras-io researchers' guide).

Source: keras-team/keras-io, guides/intro_to_keras_for_researchers.py at commit
092e21c653cd0b4a5842c56de8237710802b2a20 (fchollet), "End-to-end experiment example 1: variational
autoencoders". License: Apache-2.0.
Reduced: synthetic 784-pixel images in [0, 1] (--size of them, a multiple of 32 by default like
MNIST's 60000) instead of the MNIST download; the guide's other sections, and this section's
Functional-API/`fit` variant, left out; `keras.random.normal` for `tf.keras.backend.random_normal`
(gone in Keras 3) and `vae.losses` read as the guide reads it. Kept: `Sampling`, `Encoder`,
`Decoder` and `VariationalAutoEncoder` (a KL loss via `add_loss`), the MSE loss, Adam created
before the loop and built by the first step, `shuffle(1024).batch(32)` without `drop_remainder`,
and the `@tf.function` `training_step(x)` whose body draws the latent noise, run for at most 1000
steps with the running mean loss printed every 100.
"""

import argparse

import keras
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=4000, help="training images")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)


class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = tf.shape(z_mean)[0]
        dim = tf.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class Encoder(layers.Layer):
    """Maps digits to a triplet (z_mean, z_log_var, z)."""

    def __init__(self, latent_dim=32, intermediate_dim=64, **kwargs):
        super().__init__(**kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation=tf.nn.relu)
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean = self.dense_mean(x)
        z_log_var = self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        return z_mean, z_log_var, z


class Decoder(layers.Layer):
    """Converts z, the encoded digit vector, back into a digit."""

    def __init__(self, original_dim, intermediate_dim=64, **kwargs):
        super().__init__(**kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation=tf.nn.relu)
        self.dense_output = layers.Dense(original_dim, activation=tf.nn.sigmoid)

    def call(self, inputs):
        x = self.dense_proj(inputs)
        return self.dense_output(x)


class VariationalAutoEncoder(layers.Layer):
    """Combines the encoder and decoder into an end-to-end model for training."""

    def __init__(self, original_dim, intermediate_dim=64, latent_dim=32, **kwargs):
        super().__init__(**kwargs)
        self.original_dim = original_dim
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        kl_loss = -0.5 * tf.reduce_mean(z_log_var - tf.square(z_mean) - tf.exp(z_log_var) + 1)
        self.add_loss(kl_loss)
        return reconstructed


def synthetic_digits(n, rng):
    """Stroke-like images: two bright bars on a dark background, as float32 in [0, 1]."""
    images = np.zeros((n, 28, 28), dtype="float32")
    rows = rng.integers(2, 24, size=(n, 2))
    for i, (a, b) in enumerate(rows.tolist()):
        images[i, a:a + 3, 4:24] = 1.0
        images[i, 4:24, b:b + 3] = 0.8
    return images.reshape(n, 784)


vae = VariationalAutoEncoder(original_dim=784, intermediate_dim=64, latent_dim=32)
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)

x_train = synthetic_digits(args.size, np.random.default_rng(args.seed))
dataset = tf.data.Dataset.from_tensor_slices(x_train)
dataset = dataset.shuffle(buffer_size=1024).batch(32)


@tf.function
def training_step(x):
    with tf.GradientTape() as tape:
        reconstructed = vae(x)
        loss = loss_fn(x, reconstructed)
        loss += sum(vae.losses)
    grads = tape.gradient(loss, vae.trainable_weights)
    optimizer.apply_gradients(zip(grads, vae.trainable_weights))
    return loss


losses = []
for step, x in enumerate(dataset):
    loss = training_step(x)
    losses.append(float(loss))
    if step % 100 == 0:
        print("Step:", step, "Loss:", f"{sum(losses) / len(losses):.6f}")
    # Stop after 1000 steps.
    if step >= 1000:
        break
print("Steps:", len(losses), "Final mean loss:", f"{sum(losses) / len(losses):.6f}")
