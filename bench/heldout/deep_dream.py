"""Held-out: Deep Dream, gradient ascent over an image at three scales (keras-io example).

Source: keras-team/keras-io, examples/generative/deep_dream.py at commit
0a57de48c864d63b80083820e8988368ee5c3149 (fchollet). License: Apache-2.0.
Reduced: a random --size x --size image instead of the downloaded photo, a small randomly
initialised CNN whose layers carry InceptionV3's names `mixed4`..`mixed7` instead of the pretrained
InceptionV3, 5 ascent steps per octave, the final image's statistics printed instead of saved.
Kept: `@tf.function gradient_ascent_step(img, learning_rate)` called with images of a new size at
each octave and a Python float learning rate, and the early `max_loss` break.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow import keras

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=96, help="image side in pixels")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)

layer_settings = {"mixed4": 1.0, "mixed5": 1.5, "mixed6": 2.0, "mixed7": 2.5}
step = 0.01
num_octave = 3
octave_scale = 1.4
iterations = 5
max_loss = 15.0


def deprocess_image(x):
    x = x.reshape((x.shape[1], x.shape[2], 3))
    x /= 2.0
    x += 0.5
    x *= 255.0
    return np.clip(x, 0, 255).astype("uint8")


inputs = keras.Input((None, None, 3))
x = inputs
for name in layer_settings:
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name=name)(x)
model = keras.Model(inputs, x)
outputs_dict = {layer.name: layer.output for layer in [model.get_layer(name) for name in layer_settings]}
feature_extractor = keras.Model(inputs=model.inputs, outputs=outputs_dict)


def compute_loss(input_image):
    features = feature_extractor(input_image)
    loss = tf.zeros(shape=())
    for name in features:
        coeff = layer_settings[name]
        activation = features[name]
        scaling = tf.reduce_prod(tf.cast(tf.shape(activation), "float32"))
        loss += coeff * tf.reduce_sum(tf.square(activation[:, 2:-2, 2:-2, :])) / scaling
    return loss


@tf.function
def gradient_ascent_step(img, learning_rate):
    with tf.GradientTape() as tape:
        tape.watch(img)
        loss = compute_loss(img)
    grads = tape.gradient(loss, img)
    grads /= tf.maximum(tf.reduce_mean(tf.abs(grads)), 1e-6)
    img += learning_rate * grads
    return loss, img


def gradient_ascent_loop(img, iterations, learning_rate, max_loss=None):
    for i in range(iterations):
        loss, img = gradient_ascent_step(img, learning_rate)
        if max_loss is not None and loss > max_loss:
            break
        print("... Loss value at step %d: %.4f" % (i, loss))
    return img


rng = np.random.default_rng(args.seed)
original_img = rng.uniform(-1, 1, (1, args.size, args.size, 3)).astype("float32")
original_shape = original_img.shape[1:3]
successive_shapes = [original_shape]
for i in range(1, num_octave):
    shape = tuple([int(dim / (octave_scale**i)) for dim in original_shape])
    successive_shapes.append(shape)
successive_shapes = successive_shapes[::-1]
shrunk_original_img = tf.image.resize(original_img, successive_shapes[0])

img = tf.identity(original_img)
for i, shape in enumerate(successive_shapes):
    print("Processing octave %d with shape %s" % (i, shape))
    img = tf.image.resize(img, shape)
    img = gradient_ascent_loop(img, iterations=iterations, learning_rate=step, max_loss=max_loss)
    upscaled_shrunk_original_img = tf.image.resize(shrunk_original_img, shape)
    same_size_original = tf.image.resize(original_img, shape)
    lost_detail = same_size_original - upscaled_shrunk_original_img
    img += lost_detail
    shrunk_original_img = tf.image.resize(original_img, shape)

result = deprocess_image(img.numpy())
print("result", result.shape, round(float(result.mean()), 2))
