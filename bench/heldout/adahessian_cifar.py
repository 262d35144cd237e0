"""Held-out: CIFAR training whose tf.function step takes a Python bool and is made anew per experiment (GitHub).

Source: amirgholami/adahessian, adahessian_tf/cifar_training_tools.py (`cifar_training`) and
adahessian_tf/run_experiments.py with adahessian_tf/experiments.yaml at commit
f7e2d617ac9cfe7940ad3ea328394aaa730b262c (its `step` reported by DLPerf as issue #32 of that
repository). License: MIT.
Reduced: --size synthetic 32x32x3 uint8 images of 10 classes (half as many test images) instead of
the TFDS cifar10 download; a small two-convolution residual network with L2 regularizers instead
of `cifar_resnet20`; the yaml's two experiments that use Keras optimizers (`sgd` and `adam`, listed
there commented out after the `adahessian` one, whose Keras 2 OptimizerV2 subclass Keras 3 cannot
run); batch 64 instead of 256 (the test batch stays four times that), `val_interval` and
`log_interval` 5 and `lr_boundaries` [10, 15, 20] instead of 200 and [16000, 24000, 32000]; no
tqdm bar or `plot_model`; the logs and the weights written into a temporary folder removed at
exit; Keras 3 spellings (`reset_state`, `optimizer.learning_rate` for `_decayed_lr`, a
`.weights.h5` file name, and `model(x, training=training)`: Keras 3 takes only tensors by
position). Kept: `cifar_training` defining the `@tf.function` `step(x, y, training)`
inside it (one per experiment), called with `training=True` on `repeat().batch(...)` training
batches and `training=False` on `batch(batch_size*4)` test batches without `drop_remainder` (the
last one shorter), the metric objects updated in the step, the `PiecewiseConstantDecay` schedule
and the summaries.
"""

import argparse
import atexit
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=800, help="training images")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

workdir = tempfile.mkdtemp(prefix="adahessian-")
atexit.register(shutil.rmtree, workdir, ignore_errors=True)
os.makedirs(os.path.join(workdir, "saved_models"))


def synthetic_cifar(n, rng):
    """Images whose mean colour and a bright square's corner depend on the class."""
    y = rng.integers(0, 10, size=n).astype("int64")
    x = rng.integers(0, 120, size=(n, 32, 32, 3))
    for i, label in enumerate(y):
        x[i, :, :, label % 3] += 60 + 10 * label
        r, c = 4 + 2 * label, 28 - 2 * label
        x[i, r:r + 6, c - 6:c] = 250
    return {"train": (np.clip(x, 0, 255).astype("uint8"), y)}


rng = np.random.default_rng(args.seed)
train = synthetic_cifar(args.size, rng)["train"]
test = synthetic_cifar(max(args.size // 2, 1), rng)["train"]


def cifar_resnet(l2_reg):
    reg = tf.keras.regularizers.l2(l2_reg)
    inputs = tf.keras.Input(shape=(32, 32, 3))
    x = tf.keras.layers.Conv2D(16, 3, padding="same", kernel_regularizer=reg)(inputs)
    x = tf.keras.layers.BatchNormalization()(x)
    x = tf.keras.layers.ReLU()(x)
    shortcut = x
    x = tf.keras.layers.Conv2D(16, 3, padding="same", kernel_regularizer=reg)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    x = tf.keras.layers.ReLU()(tf.keras.layers.Add()([x, shortcut]))
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    outputs = tf.keras.layers.Dense(10, kernel_regularizer=reg)(x)
    return tf.keras.Model(inputs, outputs)


def cifar_training(model, logdir, run_name, lr_values=[0.1, 0.01, 0.001], lr_boundaries=[16000, 24000, 32000],  # noqa: B006
                   val_interval=200, log_interval=200, batch_size=256, nesterov=False, optim_method='adahessian',
                   weight_decay=0.):

    schedule = tf.keras.optimizers.schedules.PiecewiseConstantDecay(boundaries=lr_boundaries[:-1], values=lr_values)
    if optim_method == 'sgd':
        optimizer = tf.keras.optimizers.SGD(schedule, momentum=0.9, nesterov=nesterov)
    elif optim_method == 'adam':
        optimizer = tf.keras.optimizers.Adam(schedule)
    else:
        raise Exception(f'We do not support this {optim_method} yet. Please double check!')

    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    ds = {"train": tf.data.Dataset.from_tensor_slices(train), "test": tf.data.Dataset.from_tensor_slices(test)}
    std = tf.reshape((0.2023, 0.1994, 0.2010), shape=(1, 1, 3))
    mean = tf.reshape((0.4914, 0.4822, 0.4465), shape=(1, 1, 3))

    def train_prep(x, y):
        x = tf.cast(x, tf.float32) / 255.
        x = tf.image.random_flip_left_right(x)
        x = tf.image.pad_to_bounding_box(x, 4, 4, 40, 40)
        x = tf.image.random_crop(x, (32, 32, 3))
        x = (x - mean) / std
        return x, y

    def valid_prep(x, y):
        x = tf.cast(x, tf.float32) / 255.
        x = (x - mean) / std
        return x, y

    ds['train'] = ds['train'].map(train_prep).shuffle(10000).repeat().batch(batch_size).prefetch(-1)
    ds['test'] = ds['test'].map(valid_prep).batch(batch_size * 4).prefetch(-1)

    runid = run_name + '_x' + str(np.random.randint(10000))
    writer = tf.summary.create_file_writer(logdir + '/' + runid)
    accuracy = tf.metrics.SparseCategoricalAccuracy()
    cls_loss = tf.metrics.Mean()
    reg_loss = tf.metrics.Mean()

    print(f"RUNID: {runid}")

    @tf.function
    def step(x, y, training):
        with tf.GradientTape() as tape:
            r_loss = tf.add_n(model.losses)
            outs = model(x, training=training)
            c_loss = loss_fn(y, outs)
            loss = c_loss + r_loss

        if training:
            gradients = tape.gradient(loss, model.trainable_weights)
            optimizer.apply_gradients(zip(gradients, model.trainable_weights))

        accuracy(y, outs)
        cls_loss(c_loss)
        reg_loss(r_loss)

    training_step = 0
    best_validation_acc = 0
    epochs = lr_boundaries[-1] // val_interval

    for epoch in range(epochs):
        for x, y in ds['train'].take(val_interval):

            training_step += 1
            step(x, y, training=True)

            if training_step % log_interval == 0:
                with writer.as_default():
                    c_loss, r_loss, err = cls_loss.result(), reg_loss.result(), 1 - accuracy.result()
                    print(f" c_loss: {c_loss:^6.3f} | r_loss: {r_loss:^6.3f} | err: {err:^6.3f}")

                    tf.summary.scalar('train/error_rate', err, training_step)
                    tf.summary.scalar('train/classification_loss', c_loss, training_step)
                    tf.summary.scalar('train/regularization_loss', r_loss, training_step)
                    tf.summary.scalar('train/learnig_rate', optimizer.learning_rate, training_step)
                    cls_loss.reset_state()
                    reg_loss.reset_state()
                    accuracy.reset_state()

        for x, y in ds['test']:
            step(x, y, training=False)
        print(f'Testing Acc at epoch {epoch}: {accuracy.result():.4f}')
        with writer.as_default():
            tf.summary.scalar('test/classification_loss', cls_loss.result(), step=training_step)
            tf.summary.scalar('test/error_rate', 1 - accuracy.result(), step=training_step)

            if accuracy.result() > best_validation_acc:
                best_validation_acc = accuracy.result()
                model.save_weights(os.path.join(workdir, 'saved_models', runid + '.weights.h5'))

            cls_loss.reset_state()
            accuracy.reset_state()
        print(f'Best testing Acc at epoch {epoch}: {float(best_validation_acc):.4f}')


experiments = [
    {"model_parameters": {"l2_reg": 0.0001},
     "train_parameters": {"logdir": os.path.join(workdir, "logs"), "run_name": "sgd", "log_interval": 5,
                          "val_interval": 5, "lr_values": [0.1, 0.01, 0.001], "optim_method": "sgd",
                          "weight_decay": 0.}},
    {"model_parameters": {"l2_reg": 0.0001},
     "train_parameters": {"logdir": os.path.join(workdir, "logs"), "run_name": "adam", "log_interval": 5,
                          "val_interval": 5, "lr_values": [0.001, 0.0001, 0.00001], "optim_method": "adam",
                          "weight_decay": 0.}},
]

print("\n" + "#" * 22)
print("MODEL TRAINING BEGINS!")
print("#" * 22)
for exp in experiments:
    print()
    print(exp["train_parameters"]["run_name"], exp["model_parameters"])
    print()
    cifar_training(cifar_resnet(**exp["model_parameters"]), lr_boundaries=[10, 15, 20], batch_size=64,
                   **exp["train_parameters"])
