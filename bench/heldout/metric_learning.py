"""Held-out: ArcFace metric learning on digits, steps and feature extractors made per call (GitHub).

Source: ryancheunggit/tensorflow2_model_zoo, mnist_metric_learning.py at commit
584e015c459ab8e27f0f2f386fd812f78baf7b1f, with `Conv2d` and `MaxPool2d` of convnets/common.py.
License: none stated (the repository has no license file); reduced and rewritten here, not copied.
Reduced: synthetic 28x28x1 "digits" in [0, 1] (the class shows as a brighter band of rows) instead
of the MNIST download: --size training images (the default a multiple of the batch, as MNIST's
60000 is) and a quarter as many plus 16 for validation (a shorter last batch, as 10000 gives);
the repository's `Conv2d`/`MaxPool2d` wrappers as the Keras layers they wrap with padding 0 (no
bias, `VarianceScaling(scale=2.0)` kernels); at most 3 epochs instead of 100 (the early stop at 98%
validation accuracy kept); the `--gpu`/`--verbose` flags replaced by --seed/--size with verbose
printing on, without the seconds per epoch; in `plot_feature` the features' shape, mean and
spread printed instead of a scikit-learn t-SNE plot; Keras 3's `update_state` for calling
metrics. Kept: `ConvBlock`, `CosineLinear` (its weight a random constant, not a variable),
`AdditiveAngularMarginLoss`, `ConvNet`, and `main`:
two models (cosine head with the ArcFace loss, then a linear head with cross-entropy) each
trained by `train_model`, which makes its own `@tf.function train_step` and `valid_step` per
call, then passed twice to `plot_feature`, which makes its `@tf.function get_hidden(model, x_batch)`
and `get_logits(model, x_batch)` per call; `batch(BATCH_SIZE)` without `drop_remainder`.
"""

import argparse
import math

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import BatchNormalization, Conv2D, Dense, GlobalMaxPooling2D, MaxPool2D, ReLU

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=640, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

BATCH_SIZE = 32
LEARNING_RATE = 1e-3


class ConvBlock(tf.keras.Model):
    """Conv2d -> BatchNorm -> ReLU -> MaxPool"""

    def __init__(self, in_channels, out_channels, kernel_size, strides, padding, data_format, name='conv_block'):
        super().__init__()
        self.conv2d = Conv2D(filters=out_channels, kernel_size=kernel_size, strides=strides, padding='valid',
                             use_bias=False, data_format=data_format,
                             kernel_initializer=tf.keras.initializers.VarianceScaling(scale=2.0))
        self.batchnorm = BatchNormalization(axis=-1 if data_format == 'channels_last' else 1)
        self.activation = ReLU()
        self.pool = MaxPool2D(pool_size=2, strides=2, padding='valid', data_format=data_format)

    def call(self, x, training=False):
        return self.pool(self.activation(self.batchnorm(self.conv2d(x), training=training)))


class CosineLinear(tf.keras.Model):
    """Linear layer without bias on l2-normalized weights and features: ||W|| * ||X|| * cos(theta)."""

    def __init__(self, num_features, num_classes=10):
        super().__init__()
        self.weight = tf.random.uniform((num_features, num_classes), dtype='float32')

    def call(self, x):
        cos_theta = tf.matmul(tf.math.l2_normalize(x), tf.math.l2_normalize(self.weight))
        return cos_theta


class AdditiveAngularMarginLoss(tf.keras.Model):
    """Additive Angular Margin Loss (ArcFace, arXiv 1801.07698)."""

    def __init__(self, s=16, m=.3, num_classes=10):
        super().__init__()
        self.s = s
        self.m = m
        self.num_classes = num_classes
        self.cos_m = math.cos(m)
        self.sin_m = math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m
        self.criterion = tf.keras.losses.CategoricalCrossentropy(from_logits=True)

    def call(self, labels, cos_theta):
        sin_theta = tf.sqrt(1.0 - tf.square(cos_theta))
        phi = cos_theta * self.cos_m - sin_theta * self.sin_m
        phi = tf.where(cos_theta > self.th, phi, cos_theta - self.mm)
        one_hot = tf.one_hot(labels, depth=self.num_classes, dtype='float32')
        out = (one_hot * phi) + ((1.0 - one_hot) * cos_theta)
        out = out * self.s
        return self.criterion(one_hot, out)


class ConvNet(tf.keras.Model):
    def __init__(self, n_hidden=128, num_classes=10, last_linear='cosine'):
        super().__init__()
        self.features = tf.keras.Sequential([
            ConvBlock(in_channels=1, out_channels=32, kernel_size=3, strides=1, padding=0,
                      data_format='channels_last', name='features/conv1'),
            ConvBlock(in_channels=32, out_channels=64, kernel_size=3, strides=1, padding=0,
                      data_format='channels_last', name='features/conv2'),
            ConvBlock(in_channels=64, out_channels=64, kernel_size=3, strides=1, padding=0,
                      data_format='channels_last', name='features/conv2'),
            GlobalMaxPooling2D(data_format='channels_last'),
            Dense(units=n_hidden),
            ReLU()
        ])
        if last_linear == 'cosine':
            self.last_linear = CosineLinear(num_features=n_hidden, num_classes=num_classes)
        else:
            self.last_linear = Dense(num_classes, use_bias=False)

    def call(self, x, training=False):
        features = self.features(x, training=training)
        out = self.last_linear(features)
        return out

    def hidden(self, x, training=False):
        return self.features(x, training=training)


def synthetic_digits(n, rng):
    labels = rng.integers(0, 10, size=n).astype("uint8")
    images = rng.integers(0, 150, size=(n, 28, 28)).astype("uint8")
    for i, label in enumerate(labels.tolist()):
        images[i, 2 + 2 * label:4 + 2 * label, :] += 100
    return images, labels


def main(verbose=0):
    verbose = verbose
    rng = np.random.default_rng(args.seed)
    (x_train, y_train) = synthetic_digits(args.size, rng)
    (x_valid, y_valid) = synthetic_digits(args.size // 4 + 16, rng)
    x_train = x_train.reshape(len(x_train), 28, 28, 1).astype('float32') / 255.0
    x_valid = x_valid.reshape(len(x_valid), 28, 28, 1).astype('float32') / 255.0
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(BATCH_SIZE)
    valid_dataset = tf.data.Dataset.from_tensor_slices((x_valid, y_valid)).batch(BATCH_SIZE)

    def train_model(model, criterion, optimizer, max_epochs, min_acc=.98):
        train_loss = tf.keras.metrics.Mean()
        test_loss = tf.keras.metrics.Mean()
        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
        test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()

        @tf.function
        def train_step(x_batch, y_batch):
            with tf.GradientTape() as tape:
                out = model(x_batch, training=True)
                loss = criterion(y_batch, out)
            grad = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grad, model.trainable_variables))
            train_loss.update_state(loss)
            train_accuracy.update_state(y_batch, out)

        @tf.function
        def valid_step(x_batch, y_batch):
            out = model(x_batch, training=False)
            loss = criterion(y_batch, out)
            test_loss.update_state(loss)
            test_accuracy.update_state(y_batch, out)

        for epoch in range(max_epochs):
            for idx, (x_batch, y_batch) in enumerate(train_dataset):
                train_step(x_batch, y_batch)

            for idx, (x_batch, y_batch) in enumerate(valid_dataset):
                valid_step(x_batch, y_batch)

            message_template = 'epoch {:>3} train loss {:.4f} acc {:4.2f}% ' + \
                               'test loss {:.4f} acc {:4.2f}%'
            if verbose:
                print(message_template.format(
                    epoch + 1,
                    float(train_loss.result()), float(train_accuracy.result()) * 100,
                    float(test_loss.result()), float(test_accuracy.result()) * 100
                ))
            if float(test_accuracy.result()) > min_acc:
                print('terminated for that minimal test accuracy reached')
                break

        return model

    def plot_feature(model, type='hidden', fpath='plots/tsne.png'):
        @tf.function
        def get_hidden(model, x_batch):
            return model.hidden(x_batch)

        @tf.function
        def get_logits(model, x_batch):
            return model(x_batch)

        features = []
        for _, (x_batch, _) in enumerate(valid_dataset):
            x_out = get_hidden(model, x_batch) if type == 'hidden' else get_logits(model, x_batch)
            features.append(x_out)
        features = np.vstack(features)
        print('%s: features %s mean %.4f std %.4f' % (fpath, features.shape, features.mean(), features.std()))

    model = ConvNet(n_hidden=128, num_classes=10, last_linear='cosine')
    criterion = AdditiveAngularMarginLoss(s=30, m=.3)
    optimizer = tf.keras.optimizers.Adam(learning_rate=LEARNING_RATE)
    model = train_model(model, criterion, optimizer, max_epochs=3)
    plot_feature(model, 'hidden', 'plots/mnist_metric_learning_hidden_tsne.png')
    plot_feature(model, 'logits', 'plots/mnist_metric_learning_logits_tsne.png')

    model = ConvNet(n_hidden=128, num_classes=10, last_linear='linear')
    criterion = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam(learning_rate=LEARNING_RATE)
    model = train_model(model, criterion, optimizer, max_epochs=3)
    plot_feature(model, 'hidden', 'plots/mnist_linear_cce_hidden_tsne.png')
    plot_feature(model, 'logits', 'plots/mnist_linear_cce_logits_tsne.png')


if __name__ == '__main__':
    main(1)
