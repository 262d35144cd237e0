"""Held-out: a DCGAN trained by a hand-written tf.function step (keras-io guide, its GAN section).

Source: keras-team/keras-io, guides/writing_a_custom_training_loop_in_tensorflow.py at commit
1806537c4333fbff1f9fd038b78179beeda480fb (fchollet), "End-to-end example: a GAN training loop from
scratch" (keras_custom_loop.py reduces the guide's first part). License: Apache-2.0.
Reduced: synthetic 28x28 "digits" in [0, 1] (--size of them, a multiple of the batch by default
as MNIST's 70000 is) instead of the MNIST download; 32 and 64 filters instead of 64/128 and 128;
losses printed every 5 steps instead of every 100 and no generated images saved; no summaries.
Kept: the discriminator and generator, two Adams built by the first step, the
`shuffle(1024).batch(64)` dataset without `drop_remainder`, and the `@tf.function`
`train_step(real_images)` that draws latent vectors and label noise in its body, reads the global
`batch_size` for the fake half and `real_images.shape[0]` for the real half, run for one epoch that
stops after 12 steps.
"""

import argparse
import os

os.environ["KERAS_BACKEND"] = "tensorflow"

import keras
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=640, help="training images")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)

discriminator = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        keras.layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),
        keras.layers.LeakyReLU(negative_slope=0.2),
        keras.layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"),
        keras.layers.LeakyReLU(negative_slope=0.2),
        keras.layers.GlobalMaxPooling2D(),
        keras.layers.Dense(1),
    ],
    name="discriminator",
)

latent_dim = 128
generator = keras.Sequential(
    [
        keras.Input(shape=(latent_dim,)),
        keras.layers.Dense(7 * 7 * 64),
        keras.layers.LeakyReLU(negative_slope=0.2),
        keras.layers.Reshape((7, 7, 64)),
        keras.layers.Conv2DTranspose(64, (4, 4), strides=(2, 2), padding="same"),
        keras.layers.LeakyReLU(negative_slope=0.2),
        keras.layers.Conv2DTranspose(64, (4, 4), strides=(2, 2), padding="same"),
        keras.layers.LeakyReLU(negative_slope=0.2),
        keras.layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
    ],
    name="generator",
)

d_optimizer = keras.optimizers.Adam(learning_rate=0.0003)
g_optimizer = keras.optimizers.Adam(learning_rate=0.0004)
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(real_images):
    # Sample random points in the latent space and decode them to fake images.
    random_latent_vectors = tf.random.normal(shape=(batch_size, latent_dim))
    generated_images = generator(random_latent_vectors)
    combined_images = tf.concat([generated_images, real_images], axis=0)
    labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((real_images.shape[0], 1))], axis=0)
    # Add random noise to the labels - important trick!
    labels += 0.05 * tf.random.uniform(labels.shape)

    with tf.GradientTape() as tape:
        predictions = discriminator(combined_images)
        d_loss = loss_fn(labels, predictions)
    grads = tape.gradient(d_loss, discriminator.trainable_weights)
    d_optimizer.apply(grads, discriminator.trainable_weights)

    random_latent_vectors = tf.random.normal(shape=(batch_size, latent_dim))
    misleading_labels = tf.zeros((batch_size, 1))
    with tf.GradientTape() as tape:
        predictions = discriminator(generator(random_latent_vectors))
        g_loss = loss_fn(misleading_labels, predictions)
    grads = tape.gradient(g_loss, generator.trainable_weights)
    g_optimizer.apply(grads, generator.trainable_weights)
    return d_loss, g_loss, generated_images


def synthetic_digits(n, rng):
    """Blob-and-stroke images standing in for MNIST digits, float32 in [0, 1]."""
    images = np.zeros((n, 28, 28, 1), dtype="float32")
    centres = rng.integers(8, 20, size=(n, 2))
    for i, (r, c) in enumerate(centres.tolist()):
        images[i, r - 5:r + 5, c - 1:c + 2, 0] = 1.0
        images[i, r - 1:r + 2, c - 4:c + 4, 0] = 0.7
    return images


batch_size = 64
all_digits = synthetic_digits(args.size, np.random.default_rng(args.seed))
dataset = tf.data.Dataset.from_tensor_slices(all_digits)
dataset = dataset.shuffle(buffer_size=1024).batch(batch_size)

epochs = 1
for epoch in range(epochs):
    print(f"\nStart epoch {epoch}")
    for step, real_images in enumerate(dataset):
        d_loss, g_loss, generated_images = train_step(real_images)
        if step % 5 == 0:
            print(f"discriminator loss at step {step}: {d_loss:.4f}")
            print(f"adversarial loss at step {step}: {g_loss:.4f}")
            print(f"mean generated pixel at step {step}: {float(tf.reduce_mean(generated_images[0])):.4f}")
        # To limit execution time we stop after 10 steps.
        if step > 10:
            break
print(f"last step {step}: discriminator loss {d_loss:.4f}, adversarial loss {g_loss:.4f}")
