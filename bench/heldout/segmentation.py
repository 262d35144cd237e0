"""Held-out: image segmentation with a U-Net, fit with a display callback (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/images/segmentation.ipynb at commit
023b91c89dc06b3c6462d8426cc655acd452282e. License: Apache-2.0.
Reduced: --size synthetic 80x80 images with {1, 2, 3} masks (as many test images) instead of the
Oxford-IIIT Pet download, resized to 64x64 instead of 128x128, a small trainable convolutional
down stack instead of the pretrained MobileNetV2, `pix2pix.upsample` (tensorflow_examples) written
out with 32/16/8/8 filters, BATCH_SIZE 16 instead of 64, 3 epochs instead of 20, the training map
without `num_parallel_calls` (its random flips then come in a fixed order), no plots (the
predicted mask's class counts are printed instead). Kept: the `@tf.function load_image_train` and
`load_image_test` maps, the cache/shuffle/batch/repeat pipeline, `show_predictions` calling
`model.predict` on one `sample_image[tf.newaxis, ...]` from `DisplayCallback.on_epoch_end` and on
whole test batches afterwards, `fit` with `steps_per_epoch` and `validation_steps`.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=96, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)


def synthetic_split(n):
    images = rng.integers(0, 256, (n, 80, 80, 3)).astype(np.uint8)
    masks = rng.integers(1, 4, (n, 80, 80, 1)).astype(np.uint8)
    return tf.data.Dataset.from_tensor_slices({"image": images, "segmentation_mask": masks})


dataset = {"train": synthetic_split(args.size), "test": synthetic_split(args.size)}


def normalize(input_image, input_mask):
    input_image = tf.cast(input_image, tf.float32) / 255.0
    input_mask -= 1
    return input_image, input_mask


@tf.function
def load_image_train(datapoint):
    input_image = tf.image.resize(datapoint["image"], (64, 64))
    input_mask = tf.image.resize(datapoint["segmentation_mask"], (64, 64))

    if tf.random.uniform(()) > 0.5:
        input_image = tf.image.flip_left_right(input_image)
        input_mask = tf.image.flip_left_right(input_mask)

    input_image, input_mask = normalize(input_image, input_mask)

    return input_image, input_mask


def load_image_test(datapoint):
    input_image = tf.image.resize(datapoint["image"], (64, 64))
    input_mask = tf.image.resize(datapoint["segmentation_mask"], (64, 64))

    input_image, input_mask = normalize(input_image, input_mask)

    return input_image, input_mask


TRAIN_LENGTH = args.size
BATCH_SIZE = 16
BUFFER_SIZE = 1000
STEPS_PER_EPOCH = TRAIN_LENGTH // BATCH_SIZE

train = dataset["train"].map(load_image_train)  # the tutorial adds num_parallel_calls=AUTOTUNE
test = dataset["test"].map(load_image_test)

train_dataset = train.cache().shuffle(BUFFER_SIZE, seed=args.seed).batch(BATCH_SIZE).repeat()
train_dataset = train_dataset.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)
test_dataset = test.batch(BATCH_SIZE)


def display(display_list):
    image, mask, pred = display_list
    counts = np.bincount(np.asarray(pred).ravel(), minlength=3).tolist()
    print(f"  image {tuple(image.shape)}, true mask mean {float(tf.reduce_mean(mask)):.4f}, "
          f"predicted classes {counts}")


for image, mask in train.take(1):
    sample_image, sample_mask = image, mask

OUTPUT_CHANNELS = 3

# The tutorial's pretrained MobileNetV2 encoder, reduced: outputs at 32x32, 16x16, 8x8, 4x4, 2x2.
down_inputs = tf.keras.layers.Input(shape=[64, 64, 3])
x = down_inputs
layers = []
for filters in (8, 8, 16, 16, 32):
    x = tf.keras.layers.Conv2D(filters, 3, strides=2, padding="same", activation="relu")(x)
    layers.append(x)

# Create the feature extraction model
down_stack = tf.keras.Model(inputs=down_inputs, outputs=layers)


def upsample(filters, size, apply_dropout=False):
    initializer = tf.random_normal_initializer(0., 0.02)
    result = tf.keras.Sequential()
    result.add(tf.keras.layers.Conv2DTranspose(filters, size, strides=2, padding="same",
                                               kernel_initializer=initializer, use_bias=False))
    result.add(tf.keras.layers.BatchNormalization())
    if apply_dropout:
        result.add(tf.keras.layers.Dropout(0.5))
    result.add(tf.keras.layers.ReLU())
    return result


up_stack = [
    upsample(32, 3),  # 2x2 -> 4x4
    upsample(16, 3),  # 4x4 -> 8x8
    upsample(8, 3),   # 8x8 -> 16x16
    upsample(8, 3),   # 16x16 -> 32x32
]


def unet_model(output_channels):
    inputs = tf.keras.layers.Input(shape=[64, 64, 3])
    x = inputs

    # Downsampling through the model
    skips = down_stack(x)
    x = skips[-1]
    skips = reversed(skips[:-1])

    # Upsampling and establishing the skip connections
    for up, skip in zip(up_stack, skips):
        x = up(x)
        concat = tf.keras.layers.Concatenate()
        x = concat([x, skip])

    # This is the last layer of the model
    last = tf.keras.layers.Conv2DTranspose(
        output_channels, 3, strides=2,
        padding="same")  # 32x32 -> 64x64

    x = last(x)

    return tf.keras.Model(inputs=inputs, outputs=x)


model = unet_model(OUTPUT_CHANNELS)
model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])


def create_mask(pred_mask):
    pred_mask = tf.argmax(pred_mask, axis=-1)
    pred_mask = pred_mask[..., tf.newaxis]
    return pred_mask[0]


def show_predictions(dataset=None, num=1):
    if dataset:
        for image, mask in dataset.take(num):
            pred_mask = model.predict(image, verbose=0)
            display([image[0], mask[0], create_mask(pred_mask)])
    else:
        display([sample_image, sample_mask,
                 create_mask(model.predict(sample_image[tf.newaxis, ...], verbose=0))])


show_predictions()


class DisplayCallback(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        show_predictions()
        print(f"Sample Prediction after epoch {epoch + 1}")


EPOCHS = 3
VAL_SUBSPLITS = 5
VALIDATION_STEPS = args.size // BATCH_SIZE // VAL_SUBSPLITS

model_history = model.fit(train_dataset, epochs=EPOCHS,
                          steps_per_epoch=STEPS_PER_EPOCH,
                          validation_steps=VALIDATION_STEPS,
                          validation_data=test_dataset,
                          callbacks=[DisplayCallback()], verbose=0)

loss = model_history.history["loss"]
val_loss = model_history.history["val_loss"]
print("loss", [round(v, 4) for v in loss])
print("val_loss", [round(v, 4) for v in val_loss])

show_predictions(test_dataset, 3)
