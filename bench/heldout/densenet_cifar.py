"""Held-out: DenseNet's custom training loop on CIFAR-10-shaped images (tensorflow/examples model).

Source: tensorflow/examples, tensorflow_examples/models/densenet/train.py (`Train`: `decay`,
`train_step`, `test_step`, `custom_loop`; `main`), densenet.py (`ConvBlock`, `TransitionBlock`,
`DenseBlock`, `DenseNet` in its "from_depth" mode) and utils.py (`Preprocess`, `create_dataset`)
at commit 9d48df719c63cdf382db50d64a42d3ed04bdd2d2. License: Apache-2.0.
Reduced: --size synthetic 32 x 32 x 3 uint8 images in 10 classes (a class-coloured square on
noise; a quarter as many test images) from numpy instead of the tfds `cifar10` download, a
DenseNet of depth 10 with growth rate 4 (the example's CIFAR setting is depth 40, growth 12),
batch size 32, 3 epochs instead of 300 (`decay` keeps its 150/225 boundaries, so the learning rate
stays 0.1), no absl flags, `keras_fit` or channels-first branch, and the per-epoch line printed
with 4 decimals instead of the full floats; Keras 3: `AveragePooling2D` is given tf.keras's default
`pool_size=(2, 2)` and the metrics' `reset_state`; op determinism on, so that the random
augmentation in the parallel map repeats from run to run. Kept: `Preprocess` (random flip and jitter for training)
mapped over the datasets, `cache`, `shuffle(buffer_size).batch(batch_size)` without
`drop_remainder` (so each epoch ends in a partial batch, as CIFAR-10's 50000 and 10000 images do
at 64), `custom_loop` wrapping the bound `train_step` and `test_step` in `tf.function` once,
assigning `self.decay(epoch)` to the optimizer's learning rate each epoch, the metrics reset
except after the last epoch, and the model's L2 regularisation losses added in `train_step`.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=200, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)
tf.config.experimental.enable_op_determinism()

AUTOTUNE = tf.data.experimental.AUTOTUNE
l2 = tf.keras.regularizers.l2

CIFAR_MEAN = [125.3, 123.0, 113.9]
CIFAR_STD = [63.0, 62.1, 66.7]

HEIGHT = 32
WIDTH = 32


def calc_from_depth(depth, num_blocks, bottleneck):
    if depth is None or num_blocks is None:
        raise ValueError("For 'from_depth' mode, you need to specify the depth and number of blocks.")
    if num_blocks != 3:
        raise ValueError("Number of blocks must be 3 if mode is 'from_depth'.")
    if (depth - 4) % 3 == 0:
        num_layers = (depth - 4) / 3
        if bottleneck:
            num_layers //= 2
        return [num_layers] * num_blocks
    else:
        raise ValueError("Depth must be 3N+4 if mode is 'from_depth'.")


class ConvBlock(tf.keras.Model):
    def __init__(self, num_filters, data_format, bottleneck, weight_decay=1e-4, dropout_rate=0):
        super().__init__()
        self.bottleneck = bottleneck
        axis = -1 if data_format == "channels_last" else 1
        inter_filter = num_filters * 4
        self.conv2 = tf.keras.layers.Conv2D(num_filters, (3, 3), padding="same", use_bias=False,
                                            data_format=data_format, kernel_initializer="he_normal",
                                            kernel_regularizer=l2(weight_decay))
        self.batchnorm1 = tf.keras.layers.BatchNormalization(axis=axis)
        self.dropout = tf.keras.layers.Dropout(dropout_rate)

        if self.bottleneck:
            self.conv1 = tf.keras.layers.Conv2D(inter_filter, (1, 1), padding="same", use_bias=False,
                                                data_format=data_format, kernel_initializer="he_normal",
                                                kernel_regularizer=l2(weight_decay))
            self.batchnorm2 = tf.keras.layers.BatchNormalization(axis=axis)

    def call(self, x, training=True):
        output = self.batchnorm1(x, training=training)

        if self.bottleneck:
            output = self.conv1(tf.nn.relu(output))
            output = self.batchnorm2(output, training=training)

        output = self.conv2(tf.nn.relu(output))
        output = self.dropout(output, training=training)

        return output


class TransitionBlock(tf.keras.Model):
    def __init__(self, num_filters, data_format, weight_decay=1e-4, dropout_rate=0):
        super().__init__()
        axis = -1 if data_format == "channels_last" else 1

        self.batchnorm = tf.keras.layers.BatchNormalization(axis=axis)
        self.conv = tf.keras.layers.Conv2D(num_filters, (1, 1), padding="same", use_bias=False,
                                           data_format=data_format, kernel_initializer="he_normal",
                                           kernel_regularizer=l2(weight_decay))
        self.avg_pool = tf.keras.layers.AveragePooling2D(pool_size=(2, 2), data_format=data_format)

    def call(self, x, training=True):
        output = self.batchnorm(x, training=training)
        output = self.conv(tf.nn.relu(output))
        output = self.avg_pool(output)
        return output


class DenseBlock(tf.keras.Model):
    def __init__(self, num_layers, growth_rate, data_format, bottleneck, weight_decay=1e-4, dropout_rate=0):
        super().__init__()
        self.num_layers = num_layers
        self.axis = -1 if data_format == "channels_last" else 1

        self.blocks = []
        for _ in range(int(self.num_layers)):
            self.blocks.append(ConvBlock(growth_rate, data_format, bottleneck, weight_decay, dropout_rate))

    def call(self, x, training=True):
        for i in range(int(self.num_layers)):
            output = self.blocks[i](x, training=training)
            x = tf.concat([x, output], axis=self.axis)

        return x


class DenseNet(tf.keras.Model):
    def __init__(self, mode, growth_rate, output_classes, depth_of_model=None, num_of_blocks=None,
                 data_format="channels_last", bottleneck=True, compression=0.5, weight_decay=1e-4,
                 dropout_rate=0., include_top=True):
        super().__init__()
        self.growth_rate = growth_rate
        self.num_of_blocks = num_of_blocks
        self.data_format = data_format
        self.include_top = include_top

        self.num_layers_in_each_block = calc_from_depth(depth_of_model, num_of_blocks, bottleneck)

        axis = -1 if self.data_format == "channels_last" else 1
        self.num_filters = 2 * self.growth_rate

        # first conv and pool layer
        self.conv1 = tf.keras.layers.Conv2D(self.num_filters, (3, 3), strides=(1, 1), padding="same",
                                            use_bias=False, data_format=self.data_format,
                                            kernel_initializer="he_normal", kernel_regularizer=l2(weight_decay))
        self.batchnorm2 = tf.keras.layers.BatchNormalization(axis=axis)

        # calculating the number of filters after each block
        num_filters_after_each_block = [self.num_filters]
        for i in range(1, self.num_of_blocks):
            temp_num_filters = num_filters_after_each_block[i - 1] + (
                self.growth_rate * self.num_layers_in_each_block[i - 1])
            # using compression to reduce the number of inputs to the
            # transition block
            temp_num_filters = int(temp_num_filters * compression)
            num_filters_after_each_block.append(temp_num_filters)

        # dense block initialization
        self.dense_blocks = []
        self.transition_blocks = []
        for i in range(self.num_of_blocks):
            self.dense_blocks.append(DenseBlock(self.num_layers_in_each_block[i], self.growth_rate,
                                                self.data_format, bottleneck, weight_decay, dropout_rate))
            if i + 1 < self.num_of_blocks:
                self.transition_blocks.append(TransitionBlock(num_filters_after_each_block[i + 1],
                                                              self.data_format, weight_decay, dropout_rate))

        # last pooling and fc layer
        if self.include_top:
            self.last_pool = tf.keras.layers.GlobalAveragePooling2D(data_format=self.data_format)
            self.classifier = tf.keras.layers.Dense(output_classes)

    def call(self, x, training=True):
        output = self.conv1(x)

        for i in range(self.num_of_blocks - 1):
            output = self.dense_blocks[i](output, training=training)
            output = self.transition_blocks[i](output, training=training)

        output = self.dense_blocks[self.num_of_blocks - 1](output, training=training)
        output = self.batchnorm2(output, training=training)
        output = tf.nn.relu(output)

        if self.include_top:
            output = self.last_pool(output)
            output = self.classifier(output)

        return output


class Preprocess:
    def __init__(self, data_format, train):
        self._data_format = data_format
        self._train = train

    def __call__(self, image, label):
        image = tf.cast(image, tf.float32)

        if self._train:
            image = tf.image.random_flip_left_right(image)
            image = self.random_jitter(image)

        image = (image - CIFAR_MEAN) / CIFAR_STD

        if self._data_format == 'channels_first':
            image = tf.transpose(image, [2, 0, 1])

        return image, label

    def random_jitter(self, image):
        # add 4 pixels on each side; image_size == (36 x 36)
        image = tf.image.resize_with_crop_or_pad(image, HEIGHT + 8, WIDTH + 8)

        image = tf.image.random_crop(image, size=[HEIGHT, WIDTH, 3])

        return image


def synthetic_cifar(n, rng):
    """uint8 images of noise with a square whose colour and corner depend on the class."""
    labels = rng.integers(0, 10, size=n).astype(np.int64)
    images = rng.integers(0, 120, size=(n, HEIGHT, WIDTH, 3))
    for img, label in zip(images, labels):
        r, c = 4 + 2 * (label % 5), 4 + 3 * (label // 5)
        img[r:r + 12, c:c + 12] = [(60 * label) % 256, (110 * label + 40) % 256, (30 * label + 200) % 256]
    return images.astype(np.uint8), labels


def create_dataset(buffer_size, batch_size, data_format, n, rng):
    preprocess_train = Preprocess(data_format, train=True)
    preprocess_test = Preprocess(data_format, train=False)

    train_dataset = tf.data.Dataset.from_tensor_slices(synthetic_cifar(n, rng))
    test_dataset = tf.data.Dataset.from_tensor_slices(synthetic_cifar(max(1, n // 4), rng))

    train_dataset = train_dataset.map(preprocess_train, num_parallel_calls=AUTOTUNE)
    train_dataset = train_dataset.cache()
    train_dataset = train_dataset.shuffle(buffer_size).batch(batch_size)
    train_dataset = train_dataset.prefetch(buffer_size=AUTOTUNE)

    test_dataset = test_dataset.map(preprocess_test, num_parallel_calls=AUTOTUNE)
    test_dataset = test_dataset.cache().batch(batch_size)
    test_dataset = test_dataset.prefetch(buffer_size=AUTOTUNE)

    return train_dataset, test_dataset


class Train:
    def __init__(self, epochs, enable_function, model):
        self.epochs = epochs
        self.enable_function = enable_function
        self.autotune = tf.data.experimental.AUTOTUNE
        self.loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True)
        self.train_loss_metric = tf.keras.metrics.Mean(name='train_loss')
        self.train_acc_metric = tf.keras.metrics.SparseCategoricalAccuracy(name='train_accuracy')
        self.test_loss_metric = tf.keras.metrics.Mean(name='test_loss')
        self.test_acc_metric = tf.keras.metrics.SparseCategoricalAccuracy(name='test_accuracy')
        self.model = model

    def decay(self, epoch):
        if epoch < 150:
            return 0.1
        if epoch >= 150 and epoch < 225:
            return 0.01
        if epoch >= 225:
            return 0.001

    def train_step(self, image, label):
        with tf.GradientTape() as tape:
            predictions = self.model(image, training=True)
            loss = self.loss_object(label, predictions)
            loss += sum(self.model.losses)
        gradients = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))

        self.train_loss_metric(loss)
        self.train_acc_metric(label, predictions)

    def test_step(self, image, label):
        predictions = self.model(image, training=False)
        loss = self.loss_object(label, predictions)

        self.test_loss_metric(loss)
        self.test_acc_metric(label, predictions)

    def custom_loop(self, train_dataset, test_dataset):
        if self.enable_function:
            self.train_step = tf.function(self.train_step)
            self.test_step = tf.function(self.test_step)

        for epoch in range(self.epochs):
            self.optimizer.learning_rate = self.decay(epoch)

            for image, label in train_dataset:
                self.train_step(image, label)

            for test_image, test_label in test_dataset:
                self.test_step(test_image, test_label)

            template = 'Epoch: {}, Train Loss: {:.4f}, Train Accuracy: {:.4f}, Test Loss: {:.4f}, Test Accuracy: {:.4f}'

            print(template.format(epoch, self.train_loss_metric.result(), self.train_acc_metric.result(),
                                  self.test_loss_metric.result(), self.test_acc_metric.result()))

            if epoch != self.epochs - 1:
                self.train_loss_metric.reset_state()
                self.train_acc_metric.reset_state()
                self.test_loss_metric.reset_state()
                self.test_acc_metric.reset_state()

        return (self.train_loss_metric.result().numpy(), self.train_acc_metric.result().numpy(),
                self.test_loss_metric.result().numpy(), self.test_acc_metric.result().numpy())


def main(epochs, enable_function, buffer_size, batch_size, mode, growth_rate, output_classes,
         depth_of_model=None, num_of_blocks=None, data_format='channels_last', bottleneck=True,
         compression=0.5, weight_decay=1e-4, dropout_rate=0., include_top=True):
    model = DenseNet(mode, growth_rate, output_classes, depth_of_model, num_of_blocks, data_format, bottleneck,
                     compression, weight_decay, dropout_rate, include_top)
    train_obj = Train(epochs, enable_function, model)
    train_dataset, test_dataset = create_dataset(buffer_size, batch_size, data_format, args.size,
                                                 np.random.default_rng(args.seed))

    print('Training...')
    return train_obj.custom_loop(train_dataset, test_dataset)


result = main(epochs=3, enable_function=True, buffer_size=50000, batch_size=32, mode='from_depth',
              growth_rate=4, output_classes=10, depth_of_model=10, num_of_blocks=3)
print('final:', [round(float(v), 4) for v in result])
