"""Held-out: two-phase transfer learning with tf.function steps given the epoch number (GitHub).

Source: LegendBIT/tensorflow2.x-classification-model, mobilenetV3/main.py and
mobilenetV3/data_read_and_preprocess.py at commit 0d69915962643b17c066ea8cb97b3b739d01d498.
License: none stated (the repository has no license file); rewritten here as a reduction, for
measurement only.
Reduced: synthetic 40x40 colour images of 7 classes (--size training images, a third as many for
testing) held in memory instead of image folders, so `load_preprosess_image` starts from the decoded
image; a 32x32 input and a small softmax convnet instead of MobileNetV3 with ImageNet weights; 2 + 2
epochs instead of 4 + 6; no TensorBoard writer, saved models or timings; op determinism. Keras 3 spellings:
`optimizer.learning_rate` for `optimizer.lr`, and the optimizer built on all the model's variables
before the first phase freezes some (Keras 3 refuses variables it was not built with).
Kept: `train_step(gt_x, gt_y, epoch)` and its copy `train_step2`, both `@tf.function`, called per
batch with the epoch as a Python int that picks the learning rate inside the body; `test_step` and
`test_step2`; the tf.data map with random flip and brightness, `shuffle(len/10).batch(128)` without
`drop_remainder`; the layers frozen for the first phase and thawed for the second.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=300, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)
# The parallel map draws random flips and brightness: op determinism makes the runs repeatable.
tf.config.experimental.enable_op_determinism()

IMG_SIZE = (32, 32, 3)
BATCH_SIZE = 128
CLASS_NUM = 7
initial_epochs = 2
second_epochs = 2
initial_learning_rate = 0.0001
second_learning_rate = 0.00001


def data_read_and_preprocess(IMG_SIZE, BATCH_SIZE, CLASS_NUM, train, test, is_onehot):
    def load_preprosess_image(image, label):
        image = tf.image.resize_with_pad(image, IMG_SIZE[0], IMG_SIZE[1])
        image = tf.image.random_flip_left_right(image)
        image = tf.image.random_brightness(image, 1)
        image = tf.cast(image, tf.float32)
        image = image / 127.5 - 1.0
        if is_onehot:
            label = tf.one_hot(label, depth=CLASS_NUM)
        return image, label

    AUTOTUNE = tf.data.experimental.AUTOTUNE
    train_dataset = tf.data.Dataset.from_tensor_slices(train)
    train_dataset = train_dataset.map(load_preprosess_image, num_parallel_calls=AUTOTUNE)
    train_dataset = train_dataset.shuffle(int(len(train_dataset) / 10)).batch(BATCH_SIZE)
    train_dataset = train_dataset.prefetch(AUTOTUNE)
    test_dataset = tf.data.Dataset.from_tensor_slices(test)
    test_dataset = test_dataset.map(load_preprosess_image, num_parallel_calls=AUTOTUNE)
    test_dataset = test_dataset.batch(BATCH_SIZE)
    test_dataset = test_dataset.prefetch(AUTOTUNE)
    return train_dataset, test_dataset


def images(n, rng):
    """Decoded-image stand-ins: each class tints one colour channel pattern, on 0..255 noise."""
    labels = rng.integers(0, CLASS_NUM, size=n)
    pictures = rng.uniform(0, 160, size=(n, 40, 40, 3))
    for i, label in enumerate(labels.tolist()):
        pictures[i, :, :, label % 3] += 12.0 * (label + 1)
    return pictures.astype("float32"), labels.astype("int32")


def small_convnet(input_shape, classes):
    inputs = tf.keras.Input(shape=input_shape)
    x = tf.keras.layers.Conv2D(16, 3, strides=2, activation="relu")(inputs)
    x = tf.keras.layers.Conv2D(32, 3, strides=2, activation="relu")(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dropout(0.2)(x)
    x = tf.keras.layers.Dense(32, activation="relu")(x)
    outputs = tf.keras.layers.Dense(classes, activation="softmax")(x)
    return tf.keras.Model(inputs, outputs)


rng = np.random.default_rng(args.seed)
train_dataset, test_dataset = data_read_and_preprocess(
    IMG_SIZE, BATCH_SIZE, CLASS_NUM, images(args.size, rng), images(max(args.size // 3, 1), rng), True)
model = small_convnet(IMG_SIZE, CLASS_NUM)
optimizer = tf.keras.optimizers.Adam()
optimizer.build(model.trainable_variables)


@tf.function
def train_step(gt_x, gt_y, epoch):
    with tf.GradientTape() as tape:
        y = model(gt_x, training=True)
        loss = -tf.reduce_sum(gt_y * tf.math.log(y))
    gradients = tape.gradient(loss, model.trainable_variables)
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(gt_y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    if epoch < initial_epochs:
        optimizer.learning_rate.assign(initial_learning_rate)
    else:
        optimizer.learning_rate.assign(second_learning_rate)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss, accuracy, optimizer.learning_rate


@tf.function
def test_step(gt_x, gt_y):
    y = model(gt_x, training=False)
    loss = -tf.reduce_sum(gt_y * tf.math.log(y))
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(gt_y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    return loss, accuracy


def train(train_dataset, test_dataset, epoch):
    total_train_loss, total_train_acc, total_test_loss, total_test_acc = [], [], [], []
    for images_, labels in train_dataset:
        train_loss, train_acc, train_lr = train_step(images_, labels, epoch)
        total_train_loss.append(train_loss.numpy())
        total_train_acc.append(train_acc.numpy())
    for images_, labels in test_dataset:
        test_loss, test_acc = test_step(images_, labels)
        total_test_loss.append(test_loss.numpy())
        total_test_acc.append(test_acc.numpy())
    return (np.mean(total_train_loss, 0), np.mean(total_train_acc, 0), np.mean(total_test_loss, 0),
            np.mean(total_test_acc, 0))


def test(test_dataset):
    total_test_loss, total_test_acc = [], []
    for images_, labels in test_dataset:
        test_loss, test_acc = test_step(images_, labels)
        total_test_loss.append(test_loss.numpy())
        total_test_acc.append(test_acc.numpy())
    return np.mean(total_test_loss, 0), np.mean(total_test_acc, 0)


# The second phase's copies: a tf.function keeps the graph of the variables it first saw trainable.
@tf.function
def train_step2(gt_x, gt_y, epoch):
    with tf.GradientTape() as tape:
        y = model(gt_x, training=True)
        loss = -tf.reduce_sum(gt_y * tf.math.log(y))
    gradients = tape.gradient(loss, model.trainable_variables)
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(gt_y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    if epoch < initial_epochs:
        optimizer.learning_rate.assign(initial_learning_rate)
    else:
        optimizer.learning_rate.assign(second_learning_rate)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss, accuracy, optimizer.learning_rate


@tf.function
def test_step2(gt_x, gt_y):
    y = model(gt_x, training=False)
    loss = -tf.reduce_sum(gt_y * tf.math.log(y))
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(gt_y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    return loss, accuracy


def train2(train_dataset, test_dataset, epoch):
    total_train_loss, total_train_acc, total_test_loss, total_test_acc = [], [], [], []
    for images_, labels in train_dataset:
        train_loss, train_acc, train_lr = train_step2(images_, labels, epoch)
        total_train_loss.append(train_loss.numpy())
        total_train_acc.append(train_acc.numpy())
    for images_, labels in test_dataset:
        test_loss, test_acc = test_step2(images_, labels)
        total_test_loss.append(test_loss.numpy())
        total_test_acc.append(test_acc.numpy())
    return (np.mean(total_train_loss, 0), np.mean(total_train_acc, 0), np.mean(total_test_loss, 0),
            np.mean(total_test_acc, 0))


def test2(test_dataset):
    total_test_loss, total_test_acc = [], []
    for images_, labels in test_dataset:
        test_loss, test_acc = test_step2(images_, labels)
        total_test_loss.append(test_loss.numpy())
        total_test_acc.append(test_acc.numpy())
    return np.mean(total_test_loss, 0), np.mean(total_test_acc, 0)


for layer in model.layers[:-3]:
    layer.trainable = False
model.compile(loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"])

loss0, accuracy0 = test(test_dataset)
print(f"initial loss: {loss0:.4f}")
print(f"initial accuracy: {accuracy0:.4f}")
for i in range(initial_epochs):
    loss, acc, val_loss, val_acc = train(train_dataset, test_dataset, i)
    print("epoch: %d, loss: %0.5f, acc: %0.4f, val_loss: %0.5f, val_acc: %0.4f" % (i + 1, loss, acc, val_loss, val_acc))

loss1, accuracy1 = test(test_dataset)
print(f"middle loss: {loss1:.4f}")
print(f"middle accuracy: {accuracy1:.4f}")

for layer in model.layers[:-1]:
    layer.trainable = True
total_epochs = initial_epochs + second_epochs
for i in range(initial_epochs, total_epochs):
    loss, acc, val_loss, val_acc = train2(train_dataset, test_dataset, i)
    print("epoch: %d, loss: %0.5f, acc: %0.4f, val_loss: %0.5f, val_acc: %0.4f" % (i + 1, loss, acc, val_loss, val_acc))

loss2, accuracy2 = test2(test_dataset)
print(f"last loss: {loss2:.4f}")
print(f"last accuracy: {accuracy2:.4f}")
