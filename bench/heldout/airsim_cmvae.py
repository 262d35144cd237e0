"""Held-out: a cross-modal VAE built by its first train step, given the epoch and a mode (GitHub).

Source: microsoft/AirSim-Drone-Racing-VAE-Imitation, cmvae/train_cmvae.py at commit
09b2a658069829bfbdc331cac94aad4c4f9af467 and racing_models/cmvae.py (`Cmvae`) at commit
0350be16c4e7c85e891f3ab04325b257bd94b686, with the batching of racing_utils/dataset_utils.py.
License: MIT.
Reduced: --size synthetic 64x64 images in [-1, 1] with four gate-pose numbers that depend on them
instead of the 300k AirSim images and poses; a NumPy 90/10 split; the CMVAE's Dronet encoder and
its image and gate decoders are small convolution and dense stacks of the same inputs and
outputs; 3 epochs instead of 10000; the summary file written into a temporary folder; no
`model.summary()` or checkpoints (first due at epoch 5); losses printed as rounded floats; Keras 3
spellings (`Adam(learning_rate=...)`, `reset_state()`, `tf.keras.losses.MSE`, `tf.random.normal`
for Keras 2's `random_normal`, and `model(img_gt, mode=mode)`: Keras 3 takes only tensors by
position). Kept: `train(img_gt, gate_gt, epoch, mode)` and `test(img_gt, gate_gt, mode)` as
`@tf.function`s called per batch with the Python int epoch and mode, the model and Adam built by
the first train step, the nested `@tf.function`s `compute_loss_unsupervised` (given the mode) and
`regulate_weights(epoch)`, the latent noise drawn in the model's `call`, and batches of 32 without
`drop_remainder`.
"""

import argparse
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Conv2D, Conv2DTranspose, Dense, Flatten, Lambda, Reshape

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=300, help="recorded images (a tenth of them test)")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

###########################################

# DEFINE TRAINING META PARAMETERS
output_folder = tempfile.TemporaryDirectory()
output_dir = output_folder.name
batch_size = 32
epochs = 3
n_z = 20
img_res = 64
learning_rate = 1e-4


# model definition class
class Cmvae(tf.keras.Model):
    def __init__(self, n_z, gate_dim=4, res=96, trainable_model=True):
        super().__init__()
        # create the 3 base models:
        self.q_img = tf.keras.Sequential([
            Conv2D(16, 5, strides=4, activation='relu'), Conv2D(32, 3, strides=2, activation='relu'),
            Flatten(), Dense(n_z * 2)])
        self.p_img = tf.keras.Sequential([
            Dense(8 * 8 * 16, activation='relu'), Reshape((8, 8, 16)),
            Conv2DTranspose(16, 4, strides=2, padding='same', activation='relu'),
            Conv2DTranspose(8, 4, strides=2, padding='same', activation='relu'),
            Conv2DTranspose(3, 4, strides=2, padding='same', activation='tanh')])
        self.p_gate = tf.keras.Sequential([Dense(32, activation='relu'), Dense(gate_dim)])
        # Create sampler
        self.mean_params = Lambda(lambda x: x[:, : n_z])
        self.stddev_params = Lambda(lambda x: x[:, n_z:])

    def call(self, x, mode):
        # Possible modes for reconstruction:
        # 0: img -> img + gate
        # 1: img -> img
        # 2: img -> gate
        x = self.q_img(x)
        means = self.mean_params(x)
        stddev = tf.math.exp(0.5 * self.stddev_params(x))
        eps = tf.random.normal(tf.shape(stddev))
        z = means + eps * stddev
        if mode == 0:
            img_recon = self.p_img(z)
            gate_recon = self.p_gate(z)
            return img_recon, gate_recon, means, stddev, z
        elif mode == 1:
            img_recon = self.p_img(z)
            gate_recon = False
            return img_recon, gate_recon, means, stddev, z
        elif mode == 2:
            img_recon = False
            gate_recon = self.p_gate(z)
            return img_recon, gate_recon, means, stddev, z


def create_dataset_csv(n, batch_size, res, rng):
    """Images and gate poses, split 90/10 and batched as the repository does."""
    images_np = rng.uniform(-1.0, 1.0, (n, res, res, 3)).astype(np.float32)
    raw_table = np.tanh(images_np[:, ::16, ::16, :].reshape(n, -1)[:, :4] * 2.0).astype(np.float32)
    order = rng.permutation(n)
    n_test = max(int(np.ceil(0.1 * n)), 1)
    test, train = order[:n_test], order[n_test:]
    ds_train = tf.data.Dataset.from_tensor_slices((images_np[train], raw_table[train])).batch(batch_size)
    ds_test = tf.data.Dataset.from_tensor_slices((images_np[test], raw_table[test])).batch(batch_size)
    return ds_train, ds_test

###########################################
# CUSTOM TF FUNCTIONS


def reset_metrics():
    train_loss_rec_img.reset_state()
    train_loss_rec_gate.reset_state()
    train_loss_kl.reset_state()
    test_loss_rec_img.reset_state()
    test_loss_rec_gate.reset_state()
    test_loss_kl.reset_state()


@tf.function
def regulate_weights(epoch):
    # for beta
    if epoch < 10.0:  # noqa: SIM108
        beta = 1.0
    else:
        beta = 1.0
    # for w_img
    if epoch < 100:  # noqa: SIM108
        w_img = 1.0
    else:
        w_img = 1.0
    # for w_gate
    if epoch < 100:  # noqa: SIM108
        w_gate = 1.0
    else:
        w_gate = 1.0
    return beta, w_img, w_gate


@tf.function
def compute_loss_unsupervised(img_gt, gate_gt, img_recon, gate_recon, means, stddev, mode):
    # copute reconstruction loss
    if mode == 0:
        img_loss = tf.keras.losses.MSE(img_gt, img_recon)
        gate_loss = tf.keras.losses.MSE(gate_gt, gate_recon)
        kl_loss = -0.5 * tf.reduce_mean(tf.reduce_sum((1 + stddev - tf.math.pow(means, 2) - tf.math.exp(stddev)),
                                                      axis=1))
    # copute KL loss: D_KL(Q(z|X,y) || P(z|X))
    return img_loss, gate_loss, kl_loss


@tf.function
def train(img_gt, gate_gt, epoch, mode):
    with tf.GradientTape() as tape:
        img_recon, gate_recon, means, stddev, z = model(img_gt, mode=mode)
        img_loss, gate_loss, kl_loss = compute_loss_unsupervised(img_gt, gate_gt, img_recon, gate_recon, means,
                                                                 stddev, mode)
        img_loss = tf.reduce_mean(img_loss)
        gate_loss = tf.reduce_mean(gate_loss)
        beta, w_img, w_gate = regulate_weights(epoch)
        if mode == 0:
            total_loss = w_img * img_loss + w_gate * gate_loss + beta * kl_loss
            train_loss_rec_img.update_state(img_loss)
            train_loss_rec_gate.update_state(gate_loss)
            train_loss_kl.update_state(kl_loss)
    gradients = tape.gradient(total_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))


@tf.function
def test(img_gt, gate_gt, mode):
    img_recon, gate_recon, means, stddev, z = model(img_gt, mode=mode)
    img_loss, gate_loss, kl_loss = compute_loss_unsupervised(img_gt, gate_gt, img_recon, gate_recon, means, stddev,
                                                             mode)
    img_loss = tf.reduce_mean(img_loss)
    gate_loss = tf.reduce_mean(gate_loss)
    if mode == 0:
        test_loss_rec_img.update_state(img_loss)
        test_loss_rec_gate.update_state(gate_loss)
        test_loss_kl.update_state(kl_loss)

###########################################


# load dataset
print('Starting dataset')
train_ds, test_ds = create_dataset_csv(args.size, batch_size, img_res, np.random.default_rng(args.seed))
print('Done with dataset')

# create model
model = Cmvae(n_z=n_z, gate_dim=4, res=img_res, trainable_model=True)
optimizer = tf.keras.optimizers.Adam(learning_rate=learning_rate)

# define metrics
train_loss_rec_img = tf.keras.metrics.Mean(name='train_loss_rec_img')
train_loss_rec_gate = tf.keras.metrics.Mean(name='train_loss_rec_gate')
train_loss_kl = tf.keras.metrics.Mean(name='train_loss_kl')
test_loss_rec_img = tf.keras.metrics.Mean(name='test_loss_rec_img')
test_loss_rec_gate = tf.keras.metrics.Mean(name='test_loss_rec_gate')
test_loss_kl = tf.keras.metrics.Mean(name='test_loss_kl')
metrics_writer = tf.summary.create_file_writer(output_dir)

# train
print('Start training ...')
mode = 0
for epoch in range(epochs):
    for train_images, train_labels in train_ds:
        train(train_images, train_labels, epoch, mode)
    for test_images, test_labels in test_ds:
        test(test_images, test_labels, mode)

    if mode == 0:
        with metrics_writer.as_default():
            tf.summary.scalar('train_loss_rec_img', train_loss_rec_img.result(), step=epoch)
            tf.summary.scalar('train_loss_rec_gate', train_loss_rec_gate.result(), step=epoch)
            tf.summary.scalar('train_loss_kl', train_loss_kl.result(), step=epoch)
            tf.summary.scalar('test_loss_rec_img', test_loss_rec_img.result(), step=epoch)
            tf.summary.scalar('test_loss_rec_gate', test_loss_rec_gate.result(), step=epoch)
            tf.summary.scalar('test_loss_kl', test_loss_kl.result(), step=epoch)
        values = [float(m.result()) for m in (train_loss_rec_img, train_loss_rec_gate, train_loss_kl,
                                              test_loss_rec_img, test_loss_rec_gate, test_loss_kl)]
        print('Epoch {} | TRAIN: L_img: {:.5f}, L_gate: {:.5f}, L_kl: {:.5f}, L_tot: {:.5f} | TEST: L_img: {:.5f}, '
              'L_gate: {:.5f}, L_kl: {:.5f}, L_tot: {:.5f}'.format(epoch, *values[:3], sum(values[:3]), *values[3:],
                                                                  sum(values[3:])))
        reset_metrics()  # reset all the accumulators of metrics

metrics_writer.close()
output_folder.cleanup()
print('done')
