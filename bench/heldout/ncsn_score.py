"""Held-out: a noise-conditional score network trained by denoising score matching, then sampled (GitHub).

Source: Xemnas0/NCSN-TF2.0, train.py (`train_one_step`, `main`), losses/losses.py (`dsm_loss`),
generating/generate.py (`sample_one_step`, `sample_and_save`), utils.py (`get_sigma_levels`,
`try_load_model`) and datasets/dataset_loader.py (`preprocess`) at commit
f1f16ddc9ac5452c3130c810a7ce902190e566a6 (its `sample_one_step` reported by DLPerf as issue #26 of
that repository). License: none stated (the repository has no license file); reduced and
rewritten here, not copied.
Reduced: --size synthetic 28x28x1 "digits" (MNIST's shapes, a bright stroke on a dark ground)
instead of the TFDS download; a small subclassed Keras model with a per-sigma scale and shift
after each convolution stands in for `RefineNet` (the same `model([x, idx_sigmas])` call, built
by its first call); 16 filters instead of 128, `--steps` 12 and `--checkpoint_freq` 5 instead of
200000 and 5000, the checkpoints and `loss_history.csv` written into a temporary folder removed
at exit; the `train` and `generate` experiments run one after the other in one process (main.py
picks one per run), generating 16 images with T=5 steps per sigma level instead of 100 images and
T=100 (the trained model passed on instead of reloaded from its checkpoint), each sigma level's
images summarised in a printed line instead of a saved PNG grid; no tqdm bar (its description is
printed every 4 steps); f-strings for `str.format`. Kept: `train_one_step(model, optimizer,
data_batch_perturbed, data_batch, idx_sigmas, sigmas)` and the nested `@tf.function` `dsm_loss`,
fed `shuffle(10000).batch(batch_size).repeat()` batches without `drop_remainder` (a shorter
batch at the end of every pass), `get_sigma_levels` (geometric, 10 levels), and the
`@tf.function` `sample_one_step(model, x, idx_sigmas, alpha_i)` drawing its noise with
`tf.random.normal` in annealed Langevin dynamics.
"""

import argparse
import atexit
import csv
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

workdir = tempfile.mkdtemp(prefix="ncsn-")
atexit.register(shutil.rmtree, workdir, ignore_errors=True)


class Config:
    dataset = "mnist"
    model = "refinenet"
    filters = 16
    num_L = 10
    sigma_low = 0.01
    sigma_high = 1.0
    sigma_sequence = "geometric"
    steps = 12
    learning_rate = 0.001
    batch_size = 128
    checkpoint_dir = workdir + "/saved_models/"
    checkpoint_freq = 5
    resume = False
    init_samples = ""


config_values = Config()


@tf.function
def dsm_loss(score, x_perturbed, x, sigmas):
    target = (x_perturbed - x) / (tf.square(sigmas))
    loss = 0.5 * tf.reduce_sum(tf.square(score + target), axis=[1, 2, 3], keepdims=True) * tf.square(sigmas)
    loss = tf.reduce_mean(loss)
    return loss


class ScoreNet(tf.keras.Model):
    """Convolutions with a learned scale and shift per noise level (RefineNet's conditional normalisation, shrunk)."""

    def __init__(self, filters, activation):
        super().__init__()
        self.activation = activation
        self.convs = [tf.keras.layers.Conv2D(filters, 3, padding="same") for _ in range(3)]
        self.scales = [tf.keras.layers.Embedding(config_values.num_L, filters, embeddings_initializer="ones")
                       for _ in range(3)]
        self.shifts = [tf.keras.layers.Embedding(config_values.num_L, filters, embeddings_initializer="zeros")
                       for _ in range(3)]
        self.decrease_channels = None

    def build(self, input_shape):
        self.decrease_channels = tf.keras.layers.Conv2D(input_shape[0][-1], kernel_size=3, strides=1, padding="same")

    def call(self, inputs):
        x, idx_sigmas = inputs
        for conv, scale, shift in zip(self.convs, self.scales, self.shifts):
            x = conv(x)
            x = x * scale(idx_sigmas)[:, None, None, :] + shift(idx_sigmas)[:, None, None, :]
            x = self.activation(x)
        return self.decrease_channels(x)


def get_sigma_levels():
    sigma_levels = tf.math.exp(tf.linspace(tf.math.log(config_values.sigma_high),
                                           tf.math.log(config_values.sigma_low),
                                           config_values.num_L))
    return sigma_levels


def try_load_model(save_dir, step_ckpt=-1, return_new_model=True, verbose=True):
    model = ScoreNet(filters=config_values.filters, activation=tf.nn.elu)
    optimizer = tf.keras.optimizers.Adam(learning_rate=config_values.learning_rate)
    step = 0
    return model, optimizer, step


def synthetic_digits(n, rng):
    """A bright random stroke (a short line at a random angle) on a dark 28x28 ground, in [0, 255]."""
    images = np.zeros((n, 28, 28, 1), dtype="float32")
    t = np.linspace(-1.0, 1.0, 40)
    for image in images:
        angle, length = rng.uniform(0, np.pi), rng.uniform(5, 10)
        r0, c0 = rng.uniform(9, 19, size=2)
        rows = np.clip(np.round(r0 + length * t * np.sin(angle)), 0, 27).astype(int)
        cols = np.clip(np.round(c0 + length * t * np.cos(angle)), 0, 27).astype(int)
        image[rows, cols, 0] = 255.0
    return images


def get_train_test_data(dataset_name):
    train = tf.data.Dataset.from_tensor_slices(synthetic_digits(args.size, np.random.default_rng(args.seed)))
    train = train.map(lambda x: x / 255)  # rescale [0,255] -> [0,1]
    return train, None


@tf.function
def train_one_step(model, optimizer, data_batch_perturbed, data_batch, idx_sigmas, sigmas):
    with tf.GradientTape() as t:
        scores = model([data_batch_perturbed, idx_sigmas])
        current_loss = dsm_loss(scores, data_batch_perturbed, data_batch, sigmas)
        gradients = t.gradient(current_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return current_loss


def train_main():
    tf.random.set_seed(2019)

    train_data = get_train_test_data(config_values.dataset)[0]

    train_data = train_data.shuffle(buffer_size=10000)
    if config_values.dataset != 'celeb_a':
        train_data = train_data.batch(config_values.batch_size)
    train_data = train_data.repeat()
    train_data = train_data.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)

    save_dir = config_values.checkpoint_dir
    os.makedirs(save_dir, exist_ok=True)
    start_time = "run"

    sigma_levels = get_sigma_levels()

    model, optimizer, step = try_load_model(save_dir, verbose=True)

    total_steps = config_values.steps

    loss_history = []
    avg_loss = 0
    for data_batch in train_data:
        step += 1
        idx_sigmas = tf.random.uniform([data_batch.shape[0]], minval=0,
                                       maxval=config_values.num_L,
                                       dtype=tf.dtypes.int32)
        sigmas = tf.gather(sigma_levels, idx_sigmas)
        sigmas = tf.reshape(sigmas, shape=(data_batch.shape[0], 1, 1, 1))
        data_batch_perturbed = data_batch + tf.random.normal(shape=data_batch.shape) * sigmas

        current_loss = train_one_step(model, optimizer, data_batch_perturbed, data_batch, idx_sigmas, sigmas)
        loss_history.append([step, current_loss.numpy()])

        if step % 4 == 0:
            print(f'iteration {step}/{total_steps} | current loss {current_loss:.3f}')

        avg_loss += current_loss
        if step % config_values.checkpoint_freq == 0:
            # Save checkpoint
            ckpt = tf.train.Checkpoint(step=tf.Variable(0), optimizer=optimizer, model=model)
            ckpt.step.assign_add(step)
            ckpt.save(save_dir + f"{start_time}_step_{step}")
            # Append in csv file
            with open(save_dir + 'loss_history.csv', mode='a', newline='') as csv_file:
                writer = csv.writer(csv_file, delimiter=';')
                writer.writerows(loss_history)
            print(
                f"\nSaved checkpoint. Average loss: {avg_loss / config_values.checkpoint_freq:.3f}")
            loss_history = []
            avg_loss = 0
        if step == total_steps:
            return model


@tf.function
def sample_one_step(model, x, idx_sigmas, alpha_i):
    z_t = tf.random.normal(shape=x.get_shape(), mean=0, stddev=1.0)
    score = model([x, idx_sigmas])
    noise = tf.sqrt(alpha_i) * z_t
    return x + alpha_i / 2 * score + noise


def sample_and_save(model, sigmas, x=None, eps=2 * 1e-5, T=100, n_images=1, save_directory=None):
    if not os.path.exists(save_directory):
        os.makedirs(save_directory)

    if x is None:
        image_size = (n_images, 28, 28, 1)
        x = tf.random.uniform(shape=image_size)
    else:
        image_size = x.shape
        n_images = image_size[0]

    for i, sigma_i in enumerate(sigmas):
        alpha_i = eps * (sigma_i / sigmas[-1]) ** 2
        idx_sigmas = tf.ones(n_images, dtype=tf.int32) * i
        for t in range(T):
            x = sample_one_step(model, x, idx_sigmas, alpha_i)

            if (t + 1) % T == 0:
                print(f'sigma{i + 1}_t{t + 1}: mean {float(tf.reduce_mean(x)):.4f}, '
                      f'std {float(tf.math.reduce_std(x)):.4f}')
    return x


def generate_main(model):
    sigma_levels = get_sigma_levels()
    samples_directory = workdir + f'/samples/run_step{config_values.steps}/'
    sample_and_save(model, sigma_levels, x=None, n_images=16, T=5, eps=2 * 1e-5, save_directory=samples_directory)


trained = train_main()
generate_main(trained)
