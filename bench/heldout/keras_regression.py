"""Held-out: fuel efficiency regression with Keras, `predict` on ten rows, a line of 251 and the test set.

Source: tensorflow/docs, site/en/tutorials/keras/regression.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: --size synthetic rows of the Auto MPG table (MPG a noisy function of the other columns,
origin one-hot as USA/Europe/Japan) instead of the UCI download; NumPy arrays instead of pandas
frames (a seeded 80/20 split for `sample(frac=0.8)`); 40 epochs instead of 100; no plots,
`summary()` or `%%time`; the saved model written into a temporary folder; results printed rounded.
Kept: the four models as written (horsepower and all-feature, linear and DNN, sharing the adapted
`Normalization` layers), `horsepower_model.predict(horsepower[:10])` before `compile`,
`linear_model.predict(train_features[:10])`, `predict` on `tf.linspace(0.0, 250, 251)` for the
horsepower models and on the test features for the DNN, `fit` with `validation_split=0.2`,
`evaluate` per model and the reloaded model's `evaluate`.
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=392, help="rows of the table")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)
np.set_printoptions(precision=3, suppress=True)

EPOCHS = 40


def auto_mpg(n, rng):
    """Columns MPG, Cylinders, Displacement, Horsepower, Weight, Acceleration, Model Year, Europe, Japan, USA."""
    cylinders = rng.choice([4.0, 6.0, 8.0], size=n)
    displacement = cylinders * rng.uniform(20.0, 50.0, n)
    horsepower = 0.4 * displacement + rng.uniform(40.0, 80.0, n)
    weight = 8.0 * displacement + rng.uniform(1500.0, 2500.0, n)
    acceleration = rng.uniform(8.0, 25.0, n)
    year = rng.integers(70, 83, n).astype(float)
    origin = rng.integers(1, 4, n)
    mpg = 60.0 - 0.006 * weight - 0.05 * horsepower + 0.4 * (year - 70) + 1.5 * origin
    mpg = mpg + rng.normal(0.0, 2.0, n)
    onehot = np.eye(3)[origin - 1][:, [1, 2, 0]]  # Europe, Japan, USA as get_dummies orders them
    return np.column_stack([mpg, cylinders, displacement, horsepower, weight, acceleration, year, onehot])


rng = np.random.default_rng(args.seed)
dataset = auto_mpg(args.size, rng)
train_rows = rng.permutation(len(dataset))[: round(0.8 * len(dataset))]
test_rows = np.setdiff1d(np.arange(len(dataset)), train_rows)
train_dataset, test_dataset = dataset[train_rows], dataset[test_rows]

train_features = train_dataset[:, 1:].astype("float32")
test_features = test_dataset[:, 1:].astype("float32")
train_labels = train_dataset[:, 0].astype("float32")
test_labels = test_dataset[:, 0].astype("float32")
HORSEPOWER = 2  # column of the features

normalizer = tf.keras.layers.Normalization(axis=-1)
normalizer.adapt(np.array(train_features))
print("mean:", normalizer.mean.numpy())

first = np.array(train_features[:1])
with np.printoptions(precision=2, suppress=True):
    print('First example:', first)
    print('Normalized:', normalizer(first).numpy())

horsepower = np.array(train_features[:, HORSEPOWER])

horsepower_normalizer = layers.Normalization(input_shape=[1, ], axis=None)
horsepower_normalizer.adapt(horsepower)
horsepower_model = tf.keras.Sequential([
    horsepower_normalizer,
    layers.Dense(units=1)
])

print("untrained:", horsepower_model.predict(horsepower[:10], verbose=0).ravel())
horsepower_model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=0.1),
    loss='mean_absolute_error')
history = horsepower_model.fit(
    train_features[:, HORSEPOWER],
    train_labels,
    epochs=EPOCHS,
    # Suppress logging.
    verbose=0,
    # Calculate validation results on 20% of the training data.
    validation_split=0.2)
print("horsepower_model last loss: %.3f val %.3f" % (history.history['loss'][-1], history.history['val_loss'][-1]))

test_results = {}
test_results['horsepower_model'] = horsepower_model.evaluate(
    test_features[:, HORSEPOWER],
    test_labels, verbose=0)

x = tf.linspace(0.0, 250, 251)
y = horsepower_model.predict(x, verbose=0)
print("line:", y[::50].ravel())

linear_model = tf.keras.Sequential([
    normalizer,
    layers.Dense(units=1)
])
print("untrained:", linear_model.predict(train_features[:10], verbose=0).ravel())
linear_model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=0.1),
    loss='mean_absolute_error')
history = linear_model.fit(
    train_features,
    train_labels,
    epochs=EPOCHS,
    verbose=0,
    validation_split=0.2)
test_results['linear_model'] = linear_model.evaluate(
    test_features, test_labels, verbose=0)


def build_and_compile_model(norm):
    model = keras.Sequential([
        norm,
        layers.Dense(64, activation='relu'),
        layers.Dense(64, activation='relu'),
        layers.Dense(1)
    ])

    model.compile(loss='mean_absolute_error',
                  optimizer=tf.keras.optimizers.Adam(0.001))
    return model


dnn_horsepower_model = build_and_compile_model(horsepower_normalizer)
history = dnn_horsepower_model.fit(
    train_features[:, HORSEPOWER],
    train_labels,
    validation_split=0.2,
    verbose=0, epochs=EPOCHS)
x = tf.linspace(0.0, 250, 251)
y = dnn_horsepower_model.predict(x, verbose=0)
print("line:", y[::50].ravel())
test_results['dnn_horsepower_model'] = dnn_horsepower_model.evaluate(
    test_features[:, HORSEPOWER], test_labels,
    verbose=0)

dnn_model = build_and_compile_model(normalizer)
history = dnn_model.fit(
    train_features,
    train_labels,
    validation_split=0.2,
    verbose=0, epochs=EPOCHS)
test_results['dnn_model'] = dnn_model.evaluate(test_features, test_labels, verbose=0)

test_predictions = dnn_model.predict(test_features, verbose=0).flatten()
error = test_predictions - test_labels
print("test predictions:", test_predictions[:5], "mean error: %.3f" % float(np.mean(error)))

with tempfile.TemporaryDirectory() as folder:
    dnn_model.save(os.path.join(folder, 'dnn_model.keras'))
    reloaded = tf.keras.models.load_model(os.path.join(folder, 'dnn_model.keras'))
    test_results['reloaded'] = reloaded.evaluate(
        test_features, test_labels, verbose=0)

for name, value in test_results.items():
    print("Mean absolute error [MPG] %s: %.3f" % (name, value))
