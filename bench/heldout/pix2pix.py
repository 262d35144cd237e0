"""Held-out: pix2pix, an image-to-image conditional GAN with a tf.summary-logging train step.

Source: tensorflow/docs, site/en/tutorials/generative/pix2pix.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: --size synthetic side-by-side JPEG pairs (64 x 32) in a temporary folder instead of the
facades download, listed in order (`shuffle=False`), 32 x 32 images (jitter resize to 36), a U-Net
and a PatchGAN with fewer and narrower layers, 20 steps with images generated every 10 instead of
40000 and 1000, the prediction's mean printed instead of plotted, op determinism switched on so
that two runs print the same. Kept: the `@tf.function()
random_jitter` called eagerly and inside the training pipeline's map, `@tf.function
train_step(input_image, target, step)` fed the tensor step of `Dataset.enumerate()` and writing
`tf.summary` scalars at `step//1000`, the checkpoint, and `generate_images` calling the generator
with `training=True`.
"""

import argparse
import atexit
import os
import pathlib
import shutil
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=12, help="training image pairs")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)
tf.config.experimental.enable_op_determinism()

PATH = pathlib.Path(tempfile.mkdtemp(prefix="heldout-pix2pix-"))
atexit.register(shutil.rmtree, PATH, True)
rng = np.random.default_rng(args.seed)
for part, count in (("train", args.size), ("test", 3)):
    (PATH / part).mkdir()
    for i in range(count):
        pair = rng.integers(0, 256, (32, 64, 3), dtype=np.uint8)
        tf.io.write_file(str(PATH / part / f"{i + 1}.jpg"), tf.io.encode_jpeg(pair))


def load(image_file):
    image = tf.io.read_file(image_file)
    image = tf.io.decode_jpeg(image)
    w = tf.shape(image)[1]
    w = w // 2
    input_image = image[:, w:, :]
    real_image = image[:, :w, :]
    input_image = tf.cast(input_image, tf.float32)
    real_image = tf.cast(real_image, tf.float32)
    return input_image, real_image


inp, re = load(str(PATH / "train/1.jpg"))
BUFFER_SIZE = 400
BATCH_SIZE = 1
IMG_WIDTH = 32
IMG_HEIGHT = 32


def resize(input_image, real_image, height, width):
    input_image = tf.image.resize(input_image, [height, width], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    real_image = tf.image.resize(real_image, [height, width], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    return input_image, real_image


def random_crop(input_image, real_image):
    stacked_image = tf.stack([input_image, real_image], axis=0)
    cropped_image = tf.image.random_crop(stacked_image, size=[2, IMG_HEIGHT, IMG_WIDTH, 3])
    return cropped_image[0], cropped_image[1]


def normalize(input_image, real_image):
    input_image = (input_image / 127.5) - 1
    real_image = (real_image / 127.5) - 1
    return input_image, real_image


@tf.function()
def random_jitter(input_image, real_image):
    input_image, real_image = resize(input_image, real_image, 36, 36)
    input_image, real_image = random_crop(input_image, real_image)
    if tf.random.uniform(()) > 0.5:
        input_image = tf.image.flip_left_right(input_image)
        real_image = tf.image.flip_left_right(real_image)
    return input_image, real_image


for _ in range(4):
    rj_inp, rj_re = random_jitter(inp, re)
print("jitter", rj_inp.shape)


def load_image_train(image_file):
    input_image, real_image = load(image_file)
    input_image, real_image = random_jitter(input_image, real_image)
    input_image, real_image = normalize(input_image, real_image)
    return input_image, real_image


def load_image_test(image_file):
    input_image, real_image = load(image_file)
    input_image, real_image = resize(input_image, real_image, IMG_HEIGHT, IMG_WIDTH)
    input_image, real_image = normalize(input_image, real_image)
    return input_image, real_image


train_dataset = tf.data.Dataset.list_files(str(PATH / "train/*.jpg"), shuffle=False)
train_dataset = train_dataset.map(load_image_train, num_parallel_calls=tf.data.AUTOTUNE)
train_dataset = train_dataset.shuffle(BUFFER_SIZE)
train_dataset = train_dataset.batch(BATCH_SIZE)
test_dataset = tf.data.Dataset.list_files(str(PATH / "test/*.jpg"), shuffle=False)
test_dataset = test_dataset.map(load_image_test)
test_dataset = test_dataset.batch(BATCH_SIZE)
OUTPUT_CHANNELS = 3


def downsample(filters, size, apply_batchnorm=True):
    initializer = tf.random_normal_initializer(0.0, 0.02)
    result = tf.keras.Sequential()
    result.add(tf.keras.layers.Conv2D(filters, size, strides=2, padding="same",
                                      kernel_initializer=initializer, use_bias=False))
    if apply_batchnorm:
        result.add(tf.keras.layers.BatchNormalization())
    result.add(tf.keras.layers.LeakyReLU())
    return result


def upsample(filters, size, apply_dropout=False):
    initializer = tf.random_normal_initializer(0.0, 0.02)
    result = tf.keras.Sequential()
    result.add(tf.keras.layers.Conv2DTranspose(filters, size, strides=2, padding="same",
                                               kernel_initializer=initializer, use_bias=False))
    result.add(tf.keras.layers.BatchNormalization())
    if apply_dropout:
        result.add(tf.keras.layers.Dropout(0.5))
    result.add(tf.keras.layers.ReLU())
    return result


def Generator():
    inputs = tf.keras.layers.Input(shape=[IMG_HEIGHT, IMG_WIDTH, 3])
    down_stack = [downsample(8, 4, apply_batchnorm=False), downsample(16, 4), downsample(32, 4),
                  downsample(32, 4), downsample(32, 4)]
    up_stack = [upsample(32, 4, apply_dropout=True), upsample(32, 4), upsample(16, 4), upsample(8, 4)]
    initializer = tf.random_normal_initializer(0.0, 0.02)
    last = tf.keras.layers.Conv2DTranspose(OUTPUT_CHANNELS, 4, strides=2, padding="same",
                                           kernel_initializer=initializer, activation="tanh")
    x = inputs
    skips = []
    for down in down_stack:
        x = down(x)
        skips.append(x)
    skips = reversed(skips[:-1])
    for up, skip in zip(up_stack, skips):
        x = up(x)
        x = tf.keras.layers.Concatenate()([x, skip])
    x = last(x)
    return tf.keras.Model(inputs=inputs, outputs=x)


generator = Generator()
LAMBDA = 100
loss_object = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def generator_loss(disc_generated_output, gen_output, target):
    gan_loss = loss_object(tf.ones_like(disc_generated_output), disc_generated_output)
    l1_loss = tf.reduce_mean(tf.abs(target - gen_output))
    total_gen_loss = gan_loss + (LAMBDA * l1_loss)
    return total_gen_loss, gan_loss, l1_loss


def Discriminator():
    initializer = tf.random_normal_initializer(0.0, 0.02)
    inp = tf.keras.layers.Input(shape=[IMG_HEIGHT, IMG_WIDTH, 3], name="input_image")
    tar = tf.keras.layers.Input(shape=[IMG_HEIGHT, IMG_WIDTH, 3], name="target_image")
    x = tf.keras.layers.concatenate([inp, tar])
    down1 = downsample(8, 4, False)(x)
    down2 = downsample(16, 4)(down1)
    zero_pad1 = tf.keras.layers.ZeroPadding2D()(down2)
    conv = tf.keras.layers.Conv2D(32, 4, strides=1, kernel_initializer=initializer, use_bias=False)(zero_pad1)
    batchnorm1 = tf.keras.layers.BatchNormalization()(conv)
    leaky_relu = tf.keras.layers.LeakyReLU()(batchnorm1)
    zero_pad2 = tf.keras.layers.ZeroPadding2D()(leaky_relu)
    last = tf.keras.layers.Conv2D(1, 4, strides=1, kernel_initializer=initializer)(zero_pad2)
    return tf.keras.Model(inputs=[inp, tar], outputs=last)


discriminator = Discriminator()


def discriminator_loss(disc_real_output, disc_generated_output):
    real_loss = loss_object(tf.ones_like(disc_real_output), disc_real_output)
    generated_loss = loss_object(tf.zeros_like(disc_generated_output), disc_generated_output)
    return real_loss + generated_loss


generator_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
discriminator_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
checkpoint_dir = str(PATH / "training_checkpoints")
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")
checkpoint = tf.train.Checkpoint(generator_optimizer=generator_optimizer,
                                 discriminator_optimizer=discriminator_optimizer,
                                 generator=generator, discriminator=discriminator)


def generate_images(model, test_input, tar):
    prediction = model(test_input, training=True)
    print(f"prediction mean {float(tf.reduce_mean(prediction)):.4f}, "
          f"l1 to target {float(tf.reduce_mean(tf.abs(tar - prediction))):.4f}")


for example_input, example_target in test_dataset.take(1):
    generate_images(generator, example_input, example_target)
summary_writer = tf.summary.create_file_writer(str(PATH / "logs" / "fit"))


@tf.function
def train_step(input_image, target, step):
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        gen_output = generator(input_image, training=True)
        disc_real_output = discriminator([input_image, target], training=True)
        disc_generated_output = discriminator([input_image, gen_output], training=True)
        gen_total_loss, gen_gan_loss, gen_l1_loss = generator_loss(disc_generated_output, gen_output, target)
        disc_loss = discriminator_loss(disc_real_output, disc_generated_output)
    generator_gradients = gen_tape.gradient(gen_total_loss, generator.trainable_variables)
    discriminator_gradients = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    generator_optimizer.apply_gradients(zip(generator_gradients, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(discriminator_gradients, discriminator.trainable_variables))
    with summary_writer.as_default():
        tf.summary.scalar("gen_total_loss", gen_total_loss, step=step // 1000)
        tf.summary.scalar("gen_gan_loss", gen_gan_loss, step=step // 1000)
        tf.summary.scalar("gen_l1_loss", gen_l1_loss, step=step // 1000)
        tf.summary.scalar("disc_loss", disc_loss, step=step // 1000)


def fit(train_ds, test_ds, steps):
    example_input, example_target = next(iter(test_ds.take(1)))
    for step, (input_image, target) in train_ds.repeat().take(steps).enumerate():
        if step % 10 == 0:
            generate_images(generator, example_input, example_target)
            print(f"Step: {step // 10}")
        train_step(input_image, target, step)
        if (step + 1) % 10 == 0:
            checkpoint.save(file_prefix=checkpoint_prefix)


fit(train_dataset, test_dataset, steps=20)
checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))
for inp, tar in test_dataset.take(2):
    generate_images(generator, inp, tar)
