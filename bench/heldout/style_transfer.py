"""Held-out: neural style transfer, optimizing an image variable with a tf.function step.

Source: tensorflow/docs, site/en/tutorials/generative/style_transfer.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: random content (--size x --size) and style (40 x 40) images instead of the downloads, a
VGG19 with random weights (weights=None, no download), 2 epochs of 5 steps instead of 10 x 100, no
plots or saved image; results printed rounded. Kept: `StyleContentModel`, `@tf.function() train_step(image)`
on a `tf.Variable` image, called three times and then in the epoch loop, then redefined with a total
variation term and run again with a new Adam optimizer and a new image variable.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=64, help="content image side in pixels")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)
content_image = tf.constant(rng.random((1, args.size, args.size, 3), dtype=np.float32))
style_image = tf.constant(rng.random((1, 40, 40, 3), dtype=np.float32))
content_layers = ["block5_conv2"]
style_layers = ["block1_conv1", "block2_conv1", "block3_conv1", "block4_conv1", "block5_conv1"]
num_content_layers = len(content_layers)
num_style_layers = len(style_layers)


def vgg_layers(layer_names):
    vgg = tf.keras.applications.VGG19(include_top=False, weights=None)
    vgg.trainable = False
    outputs = [vgg.get_layer(name).output for name in layer_names]
    return tf.keras.Model([vgg.input], outputs)


def gram_matrix(input_tensor):
    result = tf.linalg.einsum("bijc,bijd->bcd", input_tensor, input_tensor)
    input_shape = tf.shape(input_tensor)
    num_locations = tf.cast(input_shape[1] * input_shape[2], tf.float32)
    return result / num_locations


class StyleContentModel(tf.keras.models.Model):
    def __init__(self, style_layers, content_layers):
        super().__init__()
        self.vgg = vgg_layers(style_layers + content_layers)
        self.style_layers = style_layers
        self.content_layers = content_layers
        self.num_style_layers = len(style_layers)
        self.vgg.trainable = False

    def call(self, inputs):
        inputs = inputs * 255.0
        preprocessed_input = tf.keras.applications.vgg19.preprocess_input(inputs)
        outputs = self.vgg(preprocessed_input)
        style_outputs, content_outputs = outputs[: self.num_style_layers], outputs[self.num_style_layers :]
        style_outputs = [gram_matrix(style_output) for style_output in style_outputs]
        content_dict = dict(zip(self.content_layers, content_outputs))
        style_dict = dict(zip(self.style_layers, style_outputs))
        return {"content": content_dict, "style": style_dict}


extractor = StyleContentModel(style_layers, content_layers)
results = extractor(tf.constant(content_image))
for name, output in sorted(results["style"].items()):
    print(name, output.numpy().shape, f"mean {output.numpy().mean():.4g}")

style_targets = extractor(style_image)["style"]
content_targets = extractor(content_image)["content"]
image = tf.Variable(content_image)


def clip_0_1(image):
    return tf.clip_by_value(image, clip_value_min=0.0, clip_value_max=1.0)


opt = tf.keras.optimizers.Adam(learning_rate=0.02, beta_1=0.99, epsilon=1e-1)
style_weight = 1e-2
content_weight = 1e4


def style_content_loss(outputs):
    style_outputs = outputs["style"]
    content_outputs = outputs["content"]
    style_loss = tf.add_n([tf.reduce_mean((style_outputs[name] - style_targets[name]) ** 2)
                           for name in style_outputs])
    style_loss *= style_weight / num_style_layers
    content_loss = tf.add_n([tf.reduce_mean((content_outputs[name] - content_targets[name]) ** 2)
                             for name in content_outputs])
    content_loss *= content_weight / num_content_layers
    return style_loss + content_loss


@tf.function()
def train_step(image):
    with tf.GradientTape() as tape:
        outputs = extractor(image)
        loss = style_content_loss(outputs)
    grad = tape.gradient(loss, image)
    opt.apply_gradients([(grad, image)])
    image.assign(clip_0_1(image))


def report(image):
    print(f"image mean {float(tf.reduce_mean(image)):.4f}, loss {float(style_content_loss(extractor(image))):.4g}")


train_step(image)
train_step(image)
train_step(image)
report(image)
epochs = 2
steps_per_epoch = 5
step = 0
for _ in range(epochs):
    for _ in range(steps_per_epoch):
        step += 1
        train_step(image)
    print(f"Train step: {step}")
report(image)


def high_pass_x_y(image):
    x_var = image[:, :, 1:, :] - image[:, :, :-1, :]
    y_var = image[:, 1:, :, :] - image[:, :-1, :, :]
    return x_var, y_var


def total_variation_loss(image):
    x_deltas, y_deltas = high_pass_x_y(image)
    return tf.reduce_sum(tf.abs(x_deltas)) + tf.reduce_sum(tf.abs(y_deltas))


print(f"total variation {float(total_variation_loss(image)):.4g} {float(tf.image.total_variation(image)[0]):.4g}")
total_variation_weight = 30


@tf.function()
def train_step(image):  # the tutorial redefines the step
    with tf.GradientTape() as tape:
        outputs = extractor(image)
        loss = style_content_loss(outputs)
        loss += total_variation_weight * tf.image.total_variation(image)
    grad = tape.gradient(loss, image)
    opt.apply_gradients([(grad, image)])
    image.assign(clip_0_1(image))


opt = tf.keras.optimizers.Adam(learning_rate=0.02, beta_1=0.99, epsilon=1e-1)
image = tf.Variable(content_image)
step = 0
for _ in range(epochs):
    for _ in range(steps_per_epoch):
        step += 1
        train_step(image)
    print(f"Train step: {step}")
report(image)
