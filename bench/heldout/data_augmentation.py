"""Held-out: data augmentation with Keras preprocessing layers and tf.image in tf.data pipelines.

Source: tensorflow/docs, site/en/tutorials/images/data_augmentation.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: --size synthetic images of varying size (3 classes) from a generator instead of the
tf_flowers download, IMG_SIZE 32 instead of 180, 2 epochs, a smaller CNN, no plots, op determinism
switched on so that two runs print the same. Kept: `prepare()` called for the train, validation and
test sets (each mapping the Keras `resize_and_rescale` model, the train set also
`data_augmentation`), fit/evaluate, the `RandomInvert` layer, and the tf.image pipelines: `augment`
mapped over a dataset zipped with a `Counter` seed, then `f` drawing seeds from a `tf.random.Generator`.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=80, help="images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)
tf.config.experimental.enable_op_determinism()
num_classes = 3


def flowers(first, last):
    def images():
        rng = np.random.default_rng(args.seed + first)
        for i in range(first, last):
            h, w = rng.integers(40, 72, 2)
            yield rng.integers(0, 256, (h, w, 3), dtype=np.uint8), np.int64(i % num_classes)

    return tf.data.Dataset.from_generator(images, output_signature=(
        tf.TensorSpec((None, None, 3), tf.uint8), tf.TensorSpec((), tf.int64)))


def splits():
    n = args.size
    return flowers(0, n * 8 // 10), flowers(n * 8 // 10, n * 9 // 10), flowers(n * 9 // 10, n)


train_ds, val_ds, test_ds = splits()
image, label = next(iter(train_ds))
IMG_SIZE = 32
resize_and_rescale = tf.keras.Sequential([layers.Resizing(IMG_SIZE, IMG_SIZE), layers.Rescaling(1.0 / 255)])
result = resize_and_rescale(image)
print("Min and max pixel values:", round(float(result.numpy().min()), 4), round(float(result.numpy().max()), 4))
data_augmentation = tf.keras.Sequential([layers.RandomFlip("horizontal_and_vertical"), layers.RandomRotation(0.2)])
image = tf.cast(tf.expand_dims(image, 0), tf.float32)
for _ in range(3):
    augmented_image = data_augmentation(image)
print("augmented", augmented_image.shape)

batch_size = 16
AUTOTUNE = tf.data.AUTOTUNE


def prepare(ds, shuffle=False, augment=False):
    ds = ds.map(lambda x, y: (resize_and_rescale(x), y), num_parallel_calls=AUTOTUNE)
    if shuffle:
        ds = ds.shuffle(1000)
    ds = ds.batch(batch_size)
    if augment:
        ds = ds.map(lambda x, y: (data_augmentation(x, training=True), y), num_parallel_calls=AUTOTUNE)
    return ds.prefetch(buffer_size=AUTOTUNE)


train_ds = prepare(train_ds, shuffle=True, augment=True)
val_ds = prepare(val_ds)
test_ds = prepare(test_ds)
model = tf.keras.Sequential([
    layers.Conv2D(8, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(),
    layers.Conv2D(16, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(),
    layers.Flatten(),
    layers.Dense(16, activation="relu"),
    layers.Dense(num_classes),
])
model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(train_ds, validation_data=val_ds, epochs=2, verbose=0)
print("loss", [round(v, 4) for v in history.history["loss"]])
loss, acc = model.evaluate(test_ds, verbose=0)
print("Accuracy", round(acc, 4))


def random_invert_img(x, p=0.5):
    if tf.random.uniform([]) < p:
        x = 255 - x
    return x


class RandomInvert(layers.Layer):
    def __init__(self, factor=0.5, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return random_invert_img(x)


print("inverted", round(float(tf.reduce_mean(RandomInvert()(image))), 4))

train_datasets, val_ds, test_ds = splits()


def resize_and_rescale(image, label):
    image = tf.cast(image, tf.float32)
    image = tf.image.resize(image, [IMG_SIZE, IMG_SIZE])
    image = image / 255.0
    return image, label


def augment(image_label, seed):
    image, label = image_label
    image, label = resize_and_rescale(image, label)
    image = tf.image.resize_with_crop_or_pad(image, IMG_SIZE + 6, IMG_SIZE + 6)
    new_seed = tf.random.split(seed, num=1)[0, :]
    image = tf.image.stateless_random_crop(image, size=[IMG_SIZE, IMG_SIZE, 3], seed=seed)
    image = tf.image.stateless_random_brightness(image, max_delta=0.5, seed=new_seed)
    image = tf.clip_by_value(image, 0, 1)
    return image, label


def summary(name, ds):
    print(name, [round(float(tf.reduce_mean(x)), 4) for x, _ in ds])


counter = tf.data.experimental.Counter()
train_ds = tf.data.Dataset.zip((train_datasets, (counter, counter)))
train_ds = train_ds.shuffle(1000).map(augment, num_parallel_calls=AUTOTUNE).batch(batch_size).prefetch(AUTOTUNE)
val_ds = val_ds.map(resize_and_rescale, num_parallel_calls=AUTOTUNE).batch(batch_size).prefetch(AUTOTUNE)
test_ds = test_ds.map(resize_and_rescale, num_parallel_calls=AUTOTUNE).batch(batch_size).prefetch(AUTOTUNE)
summary("counter train", train_ds)
summary("val", val_ds)

rng = tf.random.Generator.from_seed(123, alg="philox")


def f(x, y):
    seed = rng.make_seeds(1)[:, 0]
    image, label = augment((x, y), seed)
    return image, label


train_ds = train_datasets.shuffle(1000).map(f, num_parallel_calls=AUTOTUNE).batch(batch_size).prefetch(AUTOTUNE)
summary("generator train", train_ds)
