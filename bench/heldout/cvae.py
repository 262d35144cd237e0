"""Held-out: convolutional variational autoencoder (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/generative/cvae.ipynb at commit
0d13617fbe162a95da7c6930aa69c997a9d62bd8. License: Apache-2.0.
Reduced: --size synthetic binarized 28x28 images (a fifth as many test images; the default 640
divides by the batch size, as MNIST's 60000 does) instead of the MNIST download, filters 8/16
instead of 32/64, 2 epochs instead of 10, no plots or GIF (image statistics are printed instead),
`statistics.NormalDist().inv_cdf` for TensorFlow Probability's `Normal(0, 1).quantile`, Keras 3's
`Input` for `InputLayer`. Kept: the `CVAE` model with its `@tf.function sample(self, eps=None)`, the `@tf.function
train_step(model, x, optimizer)` fed `shuffle(...).batch(batch_size)` batches without
`drop_remainder`, `generate_and_save_images` sampling from the encoded test sample, and
`plot_latent_images` calling `model.sample(np.array([[xi, yi]]))` in its double Python loop.
"""

import argparse
import statistics

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=640, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)
train_images = rng.integers(0, 256, (args.size, 28, 28))
test_images = rng.integers(0, 256, (max(args.size // 5, 16), 28, 28))


def preprocess_images(images):
    images = images.reshape((images.shape[0], 28, 28, 1)) / 255.
    return np.where(images > .5, 1.0, 0.0).astype("float32")


train_images = preprocess_images(train_images)
test_images = preprocess_images(test_images)

train_size = len(train_images)
batch_size = 32
test_size = len(test_images)

train_dataset = (tf.data.Dataset.from_tensor_slices(train_images)
                 .shuffle(train_size, seed=args.seed).batch(batch_size))
test_dataset = (tf.data.Dataset.from_tensor_slices(test_images)
                .shuffle(test_size, seed=args.seed).batch(batch_size))


class CVAE(tf.keras.Model):
    """Convolutional variational autoencoder."""

    def __init__(self, latent_dim):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = tf.keras.Sequential(
            [
                tf.keras.Input(shape=(28, 28, 1)),
                tf.keras.layers.Conv2D(
                    filters=8, kernel_size=3, strides=(2, 2), activation="relu"),
                tf.keras.layers.Conv2D(
                    filters=16, kernel_size=3, strides=(2, 2), activation="relu"),
                tf.keras.layers.Flatten(),
                # No activation
                tf.keras.layers.Dense(latent_dim + latent_dim),
            ]
        )

        self.decoder = tf.keras.Sequential(
            [
                tf.keras.Input(shape=(latent_dim,)),
                tf.keras.layers.Dense(units=7 * 7 * 32, activation=tf.nn.relu),
                tf.keras.layers.Reshape(target_shape=(7, 7, 32)),
                tf.keras.layers.Conv2DTranspose(
                    filters=16, kernel_size=3, strides=2, padding="same",
                    activation="relu"),
                tf.keras.layers.Conv2DTranspose(
                    filters=8, kernel_size=3, strides=2, padding="same",
                    activation="relu"),
                # No activation
                tf.keras.layers.Conv2DTranspose(
                    filters=1, kernel_size=3, strides=1, padding="same"),
            ]
        )

    @tf.function
    def sample(self, eps=None):
        if eps is None:
            eps = tf.random.normal(shape=(100, self.latent_dim))
        return self.decode(eps, apply_sigmoid=True)

    def encode(self, x):
        mean, logvar = tf.split(self.encoder(x), num_or_size_splits=2, axis=1)
        return mean, logvar

    def reparameterize(self, mean, logvar):
        eps = tf.random.normal(shape=mean.shape)
        return eps * tf.exp(logvar * .5) + mean

    def decode(self, z, apply_sigmoid=False):
        logits = self.decoder(z)
        if apply_sigmoid:
            probs = tf.sigmoid(logits)
            return probs
        return logits


optimizer = tf.keras.optimizers.Adam(1e-4)


def log_normal_pdf(sample, mean, logvar, raxis=1):
    log2pi = tf.math.log(2. * np.pi)
    return tf.reduce_sum(
        -.5 * ((sample - mean) ** 2. * tf.exp(-logvar) + logvar + log2pi),
        axis=raxis)


def compute_loss(model, x):
    mean, logvar = model.encode(x)
    z = model.reparameterize(mean, logvar)
    x_logit = model.decode(z)
    cross_ent = tf.nn.sigmoid_cross_entropy_with_logits(logits=x_logit, labels=x)
    logpx_z = -tf.reduce_sum(cross_ent, axis=[1, 2, 3])
    logpz = log_normal_pdf(z, 0., 0.)
    logqz_x = log_normal_pdf(z, mean, logvar)
    return -tf.reduce_mean(logpx_z + logpz - logqz_x)


@tf.function
def train_step(model, x, optimizer):
    """Executes one training step and returns the loss.

    This function computes the loss and gradients, and uses the latter to
    update the model's parameters.
    """
    with tf.GradientTape() as tape:
        loss = compute_loss(model, x)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))


epochs = 2
# set the dimensionality of the latent space to a plane for visualization later
latent_dim = 2
num_examples_to_generate = 16

# keeping the random vector constant for generation (prediction) so
# it will be easier to see the improvement.
random_vector_for_generation = tf.random.normal(
    shape=[num_examples_to_generate, latent_dim])
model = CVAE(latent_dim)


def generate_and_save_images(model, epoch, test_sample):
    mean, logvar = model.encode(test_sample)
    z = model.reparameterize(mean, logvar)
    predictions = model.sample(z)
    print(f"epoch {epoch}: images {tuple(predictions.shape)}, mean {float(tf.reduce_mean(predictions)):.4f}")


# Pick a sample of the test set for generating output images
assert batch_size >= num_examples_to_generate
for test_batch in test_dataset.take(1):
    test_sample = test_batch[0:num_examples_to_generate, :, :, :]

generate_and_save_images(model, 0, test_sample)

for epoch in range(1, epochs + 1):
    for train_x in train_dataset:
        train_step(model, train_x, optimizer)

    loss = tf.keras.metrics.Mean()
    for test_x in test_dataset:
        loss(compute_loss(model, test_x))
    elbo = -loss.result()
    print(f"Epoch: {epoch}, Test set ELBO: {float(elbo):.4f}")
    generate_and_save_images(model, epoch, test_sample)


def plot_latent_images(model, n, digit_size=28):
    """Plots n x n digit images decoded from the latent space."""

    norm = statistics.NormalDist(0, 1)
    grid_x = np.array([norm.inv_cdf(p) for p in np.linspace(0.05, 0.95, n)])
    grid_y = np.array([norm.inv_cdf(p) for p in np.linspace(0.05, 0.95, n)])
    image_width = digit_size * n
    image_height = image_width
    image = np.zeros((image_height, image_width))

    for i, yi in enumerate(grid_x):
        for j, xi in enumerate(grid_y):
            z = np.array([[xi, yi]])
            x_decoded = model.sample(z)
            digit = tf.reshape(x_decoded[0], (digit_size, digit_size))
            image[i * digit_size: (i + 1) * digit_size,
                  j * digit_size: (j + 1) * digit_size] = digit.numpy()

    print(f"latent grid {n}x{n}: image {image.shape}, mean {image.mean():.4f}, "
          f"corner {image[:digit_size, :digit_size].mean():.4f}")


plot_latent_images(model, 20)
