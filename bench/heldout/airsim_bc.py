"""Held-out: behaviour cloning of drone velocities from a frozen VAE's latent code, epoch passed (GitHub).

Source: microsoft/AirSim-Drone-Racing-VAE-Imitation, imitation_learning/train_bc.py at commit
0350be16c4e7c85e891f3ab04325b257bd94b686, racing_models/bc_latent.py (`BcLatent`) and
racing_models/cmvae.py (`Cmvae.encode`) and racing_utils/dataset_utils.py (`create_dataset_txt`).
License: MIT.
Reduced: --size synthetic 64x64 BGR images in [-1, 1] and four velocities in [-1, 1] instead of
the recorded AirSim images and `proc_vel.txt`; a NumPy 90/10 split instead of scikit-learn's
`train_test_split`; the CMVAE keeps only its image encoder, two small convolutions in place of
Dronet, untrained (the original loads a checkpoint and freezes it), with `tf.random.normal`
for Keras 2's `random_normal`; 4 epochs instead of 10000; the summary file written into a
temporary folder; no `bc_model.summary()` or checkpoints; Keras 3 spellings
(`Adam(learning_rate=...)`, `reset_state()`, `tf.keras.losses.MSE`). Kept: `train(images, labels, epoch,
training_mode)` and `test(images, labels, training_mode)` as `@tf.function`s called per batch with
the Python int epoch and the mode string, the nested `@tf.function` `compute_loss` and
`reset_metrics`, the latent noise drawn inside the step, and batches of 32 without
`drop_remainder` (the last one shorter).
"""

import argparse
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=300, help="recorded images (a tenth of them test)")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

###########################################

# DEFINE TRAINING META PARAMETERS
output_folder = tempfile.TemporaryDirectory()
output_dir = output_folder.name
training_mode = 'latent'  # 'full' or 'latent'
n_z = 20
batch_size = 32
epochs = 4
img_res = 64
learning_rate = 1e-2


class Cmvae(tf.keras.Model):
    def __init__(self, n_z):
        super().__init__()
        # The image encoder: Dronet in the original, two strided convolutions here
        self.q_img = tf.keras.Sequential([
            tf.keras.layers.Conv2D(8, 5, strides=4, activation='relu'),
            tf.keras.layers.Conv2D(16, 3, strides=2, activation='relu'),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(n_z * 2),
        ])
        # Create sampler
        self.mean_params = tf.keras.layers.Lambda(lambda x: x[:, : n_z])
        self.stddev_params = tf.keras.layers.Lambda(lambda x: x[:, n_z:])

    def encode(self, x):
        x = self.q_img(x)
        means = self.mean_params(x)
        stddev = tf.math.exp(0.5 * self.stddev_params(x))
        eps = tf.random.normal(tf.shape(stddev))
        z = means + eps * stddev
        return z, means, stddev


class BcLatent(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.create_model()

    def call(self, z):
        return self.network(z)

    def create_model(self):
        dense0 = tf.keras.layers.Dense(units=256, activation='relu')
        dense3 = tf.keras.layers.Dense(units=16, activation='relu')
        dense4 = tf.keras.layers.Dense(units=4, activation='linear')
        self.network = tf.keras.Sequential([dense0, dense3, dense4], name='bc_dense')


def create_dataset_txt(n, batch_size, res, rng):
    """Images and their normalized velocities, split 90/10 and batched as the repository does."""
    images_np = rng.uniform(-1.0, 1.0, (n, res, res, 3)).astype(np.float32)
    # velocities that depend on the image, so that there is something to learn
    vel_table = np.tanh(images_np[:, ::8, ::8, :].reshape(n, -1)[:, :4] * 2.0).astype(np.float32)
    order = rng.permutation(n)
    n_test = max(int(np.ceil(0.1 * n)), 1)
    test, train = order[:n_test], order[n_test:]
    ds_train = tf.data.Dataset.from_tensor_slices((images_np[train], vel_table[train])).batch(batch_size)
    ds_test = tf.data.Dataset.from_tensor_slices((images_np[test], vel_table[test])).batch(batch_size)
    return ds_train, ds_test

###########################################
# CUSTOM FUNCTIONS


@tf.function
def reset_metrics():
    train_loss_rec_v.reset_state()
    test_loss_rec_v.reset_state()


@tf.function
def compute_loss(labels, predictions):
    recon_loss = tf.keras.losses.MSE(labels, predictions)
    return recon_loss


@tf.function
def train(images, labels, epoch, training_mode):
    with tf.GradientTape() as tape:
        if training_mode == 'full':
            predictions = bc_model(images)
        elif training_mode == 'latent':
            z, _, _ = cmvae_model.encode(images)
            predictions = bc_model(z)
        recon_loss = tf.reduce_mean(compute_loss(labels, predictions))
    gradients = tape.gradient(recon_loss, bc_model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, bc_model.trainable_variables))
    train_loss_rec_v(recon_loss)


@tf.function
def test(images, labels, training_mode):
    if training_mode == 'full':
        predictions = bc_model(images)
    elif training_mode == 'latent':
        z, _, _ = cmvae_model.encode(images)
        predictions = bc_model(z)
    recon_loss = tf.reduce_mean(compute_loss(labels, predictions))
    test_loss_rec_v(recon_loss)

###########################################


# load dataset
print('Starting dataset')
train_ds, test_ds = create_dataset_txt(args.size, batch_size, img_res, np.random.default_rng(args.seed))
print('Done with dataset')

# create models
cmvae_model = Cmvae(n_z=n_z)
cmvae_model.trainable = False
bc_model = BcLatent()
optimizer = tf.keras.optimizers.Adam(learning_rate=learning_rate)

# define metrics
train_loss_rec_v = tf.keras.metrics.Mean(name='train_loss_rec_v')
test_loss_rec_v = tf.keras.metrics.Mean(name='test_loss_rec_v')
metrics_writer = tf.summary.create_file_writer(output_dir)

# train
print('Start training ...')
for epoch in range(epochs):
    for train_images, train_labels in train_ds:
        train(train_images, train_labels, epoch, training_mode)
    for test_images, test_labels in test_ds:
        test(test_images, test_labels, training_mode)

    with metrics_writer.as_default():
        tf.summary.scalar('train_loss_rec_gate', train_loss_rec_v.result(), step=epoch)
        tf.summary.scalar('test_loss_rec_gate', test_loss_rec_v.result(), step=epoch)
    print(f'Epoch {epoch} | Train L_gate: {float(train_loss_rec_v.result()):.5f} '
          f'| Test L_gate: {float(test_loss_rec_v.result()):.5f}')
    reset_metrics()  # reset all the accumulators of metrics

metrics_writer.close()
output_folder.cleanup()
print('done')
