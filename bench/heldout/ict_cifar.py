"""Held-out: interpolation consistency training, the consistency weight a float per epoch (GitHub).

Source: ryancheunggit/tensorflow2_model_zoo, cifar10_cnn_ict.py (`train`) at commit
017eca46f78324a744e83980465c1bc4c448bf22 (its `w` reported by DLPerf as issue #13 of that
repository; metric_learning.py here reduces another program of the same repository). License:
none stated (the repository has no license file); reduced and rewritten here, not copied.
Reduced: --size synthetic 32x32x3 images of 10 classes (a quarter as many validation images, which
also serve as the unlabeled data) instead of the keras.datasets download; `sizes=(8, 16)` instead
of (32, 64); NUM_EPOCHS 4 instead of 100 (the weight schedule reads it, so it still rises over the
epochs); `verbose=1` without the seconds per epoch (a clock reading), the weights saved into a
temporary folder removed at exit as a Keras 3 `.weights.h5` file; the `inference` procedure left
out; `float(...)` around the epoch's weight: TensorFlow 2.21 passes the NumPy float64 as a float64
tensor, which the float32 loss refuses, so it is made the plain Python number it is meant to be.
Kept: the subclassed `ConvBlock`, `MaxAvgPool`, `Classifier` (dropout only when training) and
`CNN`, the teacher `ema_model` built by a first call and synced, the `@tf.function`s defined inside
`train`: `mixup(u1, u2, alpha=MIXUP_ALPHA)` drawing `np.random.beta` in its body and called from
`train_step(x_batch, y_batch, u_batch_1, u_batch_2, w)`, which gets the epoch's weight `w` on every
call, and `valid_step`, both fed `batch(BATCH_SIZE)` datasets without `drop_remainder` (a shorter
last batch) and NumPy batches of unlabeled images drawn with `np.random.choice`.
"""

import argparse
import atexit
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=400, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

BATCH_SIZE = 32
NUM_CLASS = 10
NUM_EPOCHS = 4
LEARNING_RATE = 1e-3
MIXUP_ALPHA = .5
EMA_DECAY = .999
W_MAX = 50

workdir = tempfile.mkdtemp(prefix="ict-")
atexit.register(shutil.rmtree, workdir, ignore_errors=True)
os.makedirs(os.path.join(workdir, 'models/cifar10_cnn_ict/'))
MODEL_FILE = os.path.join(workdir, 'models/cifar10_cnn_ict/model.weights.h5')


def synthetic_cifar10(n, rng):
    """CIFAR-10-shaped uint8 images whose colour and a bright bar's position follow the class."""
    def part(count):
        y = rng.integers(0, NUM_CLASS, size=(count, 1)).astype("uint8")
        x = rng.integers(0, 100, size=(count, 32, 32, 3))
        for image, label in zip(x, y[:, 0]):
            image[..., label % 3] += 80 + 10 * int(label)
            image[2 + 3 * int(label):5 + 3 * int(label), :, :] = 250
        return np.clip(x, 0, 255).astype("uint8"), y
    return part(n), part(max(n // 4, 1))


class ConvBlock(keras.Model):
    """Convolution block: (Conv - BN - ReLu) * 2 -> Avg Pooling."""
    def __init__(self, out_channels):
        super().__init__()
        self.conv1 = layers.Conv2D(filters=out_channels, kernel_size=(3, 3), use_bias=False)  # BN absorbes bias
        self.conv2 = layers.Conv2D(filters=out_channels, kernel_size=(3, 3), use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.bn2 = layers.BatchNormalization()
        self.pooling = layers.AveragePooling2D(pool_size=(2, 2))

    def call(self, x, training=True):
        x = tf.nn.relu(self.bn1(self.conv1(x), training=training))
        x = tf.nn.relu(self.bn2(self.conv2(x), training=training))
        x = self.pooling(x)
        return x


class MaxAvgPool(keras.Model):
    """Global pooling."""
    def __init__(self):
        super().__init__()
        self.max_pool = layers.GlobalMaxPooling2D()
        self.avg_pool = layers.GlobalAveragePooling2D()

    def call(self, x):
        x = 0.5 * (self.max_pool(x) + self.avg_pool(x))
        return x


class Classifier(keras.Model):
    """A simple classifier with one hidden layer."""
    def __init__(self, num_class):
        super().__init__()
        self.hidden = layers.Dense(units=32)
        self.classifier = layers.Dense(units=num_class)

    def call(self, x, training=True):
        if training:  # noqa: SIM108
            x = tf.nn.relu(tf.nn.dropout(self.hidden(x), .2))
        else:
            x = tf.nn.relu(self.hidden(x))
        x = tf.nn.softmax(self.classifier(x))
        return x


class CNN(keras.Model):
    """Convolutional Network."""
    def __init__(self, sizes=(8, 16), num_class=NUM_CLASS):
        super().__init__()
        self.feature_extraction = keras.Sequential([
            ConvBlock(out_channels=size) for size in sizes
        ])
        self.feature = MaxAvgPool()
        self.classifier = Classifier(num_class=NUM_CLASS)

    def call(self, x, training=True):
        x = self.feature_extraction(x, training=training)
        x = self.feature(x)
        x = self.classifier(x, training=training)
        return x


def _copy_model_weights(from_model, to_model):
    """Copy weights from a model to a model."""
    for from_val, to_val in zip(from_model.variables, to_model.variables):
        to_val.assign(from_val)


def _ema_model_weights(from_model, to_model, decay=EMA_DECAY):
    """Exponential Moving Average of model's weights were stored as ema_model."""
    for from_val, to_val in zip(from_model.variables, to_model.variables):
        to_val.assign(decay * to_val + (1 - decay) * from_val)


def train(verbose=0):
    """Train the model."""
    # load dataset
    (x_train, y_train), (x_valid, y_valid) = synthetic_cifar10(args.size, np.random.default_rng(args.seed))
    x_train = x_train.astype('float32') / 255.0
    x_valid = x_valid.astype('float32') / 255.0
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(BATCH_SIZE)
    valid_dataset = tf.data.Dataset.from_tensor_slices((x_valid, y_valid)).batch(BATCH_SIZE)

    # config model
    model = CNN()
    ema_model = CNN()  # the teacher model

    # initialize and sync model weights
    init_batch = x_train[np.random.choice(range(len(x_train)), BATCH_SIZE)]
    _, _ = model(init_batch, training=False), ema_model(init_batch, training=False)
    _copy_model_weights(ema_model, model)

    data_criterion = keras.losses.SparseCategoricalCrossentropy()
    consistency_criterion = keras.losses.MeanSquaredError()

    optimizer = keras.optimizers.Adam(learning_rate=LEARNING_RATE)
    train_data_loss = keras.metrics.Mean()
    train_consistency_loss = keras.metrics.Mean()
    test_loss = keras.metrics.Mean()
    train_accuracy = keras.metrics.SparseCategoricalAccuracy()
    test_accuracy = keras.metrics.SparseCategoricalAccuracy()

    @tf.function
    def mixup(u1, u2, alpha=MIXUP_ALPHA):
        """Mixup unlabeled data, also use teacher model to guess label."""
        lambd = np.random.beta(alpha, alpha)
        q1 = ema_model(u1, training=False)
        q2 = ema_model(u2, training=False)
        u_mixed = lambd * u1 + (1 - lambd) * u2
        q_guessed = lambd * q1 + (1 - lambd) * q2
        return u_mixed, q_guessed

    @tf.function
    def train_step(x_batch, y_batch, u_batch_1, u_batch_2, w):
        u_mixed, q_guessed = mixup(u_batch_1, u_batch_2)

        with tf.GradientTape() as tape:
            x_out = model(x_batch, training=True)
            u_out = model(u_mixed, training=False)
            data_loss = data_criterion(y_batch, x_out)
            consistency_loss = w * consistency_criterion(q_guessed, u_out)
            loss = data_loss + consistency_loss

        grad = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grad, model.trainable_variables))
        _ema_model_weights(model, ema_model)
        train_data_loss(data_loss)
        train_consistency_loss(consistency_loss)
        train_accuracy(y_batch, x_out)

    @tf.function
    def valid_step(x_batch, y_batch):
        out = model(x_batch, training=False)
        loss = data_criterion(y_batch, out)
        test_loss(loss)
        test_accuracy(y_batch, out)

    # training loop
    for epoch in range(NUM_EPOCHS):
        # calculate ict loss weights, this weight peaks at W_MAX in sigmoid fashion from epoch 0 to 1/4 total epochs
        w = float(min(W_MAX, 50 / (1 + np.exp(NUM_EPOCHS / 4 - epoch))))
        # train
        for idx, (x_batch, y_batch) in enumerate(train_dataset):
            u_batch_1 = x_valid[np.random.choice(range(len(x_valid)), BATCH_SIZE)]
            u_batch_2 = x_valid[np.random.choice(range(len(x_valid)), BATCH_SIZE)]
            train_step(x_batch, y_batch, u_batch_1, u_batch_2, w)

        # validate
        for idx, (x_batch, y_batch) in enumerate(valid_dataset):
            valid_step(x_batch, y_batch)

        message_template = 'epoch {:>3} train cce {:.4f} ict {:.4f} acc {:4.2f}% test cce {:.4f} acc {:4.2f}%'
        if verbose:
            print(message_template.format(
                epoch + 1,
                train_data_loss.result(), train_consistency_loss.result(), train_accuracy.result() * 100,
                test_loss.result(), test_accuracy.result() * 100
            ))

    model.save_weights(MODEL_FILE)


train(verbose=1)
