"""Held-out: visualize what convnet filters respond to by gradient ascent (keras-io example).

Source: keras-team/keras-io, examples/vision/visualizing_what_convnets_learn.py at commit
12bffb0e2689735c685a82a6f2d3d47671b4f7fa (fchollet). License: Apache-2.0.
Reduced: a small randomly initialised CNN with a layer named `conv3_block4_out` instead of the
pretrained ResNet50V2 (no weight download), 64x64 images, 10 ascent steps, --size filters instead
of 64, the loss and an image statistic printed instead of saved PNGs. Kept: `@tf.function
gradient_ascent_step(img, filter_index, learning_rate)` called with a Python int filter index
and a Python float learning rate, from `visualize_filter` in a loop over the filters.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow import keras

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=8, help="filters to visualize")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)

img_width = 64
img_height = 64
layer_name = "conv3_block4_out"
inputs = keras.Input((None, None, 3))
x = keras.layers.Conv2D(16, 3, activation="relu")(inputs)
x = keras.layers.Conv2D(16, 3, strides=2, activation="relu")(x)
x = keras.layers.Conv2D(32, 3, activation="relu", name=layer_name)(x)
x = keras.layers.GlobalAveragePooling2D()(x)
model = keras.Model(inputs, x)
layer = model.get_layer(name=layer_name)
feature_extractor = keras.Model(inputs=model.inputs, outputs=layer.output)


def compute_loss(input_image, filter_index):
    activation = feature_extractor(input_image)
    filter_activation = activation[:, 2:-2, 2:-2, filter_index]
    return tf.reduce_mean(filter_activation)


@tf.function
def gradient_ascent_step(img, filter_index, learning_rate):
    with tf.GradientTape() as tape:
        tape.watch(img)
        loss = compute_loss(img, filter_index)
    grads = tape.gradient(loss, img)
    grads = tf.math.l2_normalize(grads)
    img += learning_rate * grads
    return loss, img


def initialize_image():
    img = tf.random.uniform((1, img_width, img_height, 3))
    return (img - 0.5) * 0.25


def visualize_filter(filter_index):
    iterations = 10
    learning_rate = 10.0
    img = initialize_image()
    for _ in range(iterations):
        loss, img = gradient_ascent_step(img, filter_index, learning_rate)
    img = deprocess_image(img[0].numpy())
    return loss, img


def deprocess_image(img):
    img -= img.mean()
    img /= img.std() + 1e-5
    img *= 0.15
    img = img[8:-8, 8:-8, :]
    img += 0.5
    img = np.clip(img, 0, 1)
    img *= 255
    return np.clip(img, 0, 255).astype("uint8")


all_imgs = []
for filter_index in range(args.size):
    loss, img = visualize_filter(filter_index)
    print(f"filter {filter_index}: loss {float(loss):.4f}, mean pixel {img.mean():.2f}")
    all_imgs.append(img)
print("grid", np.stack(all_imgs).shape)
