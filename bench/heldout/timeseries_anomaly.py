"""Held-out: a Conv1D autoencoder that flags anomalies by reconstruction error (keras-io).

Source: keras-team/keras-io, examples/timeseries/timeseries_anomaly_detection.py at commit
3aca0563e5cebb3e442bee3f7c30adc53cfe3102 (pavithrasv). License: Apache-2.0.
Reduced: synthetic NAB-like series (a daily bump plus noise; the test copy with a jump up) of
--size points instead of the two NAB CSV downloads, held in numpy arrays instead of pandas frames;
48 points a day instead of 288 (so TIME_STEPS 48); 5 epochs instead of 50; `verbose=0` for `fit` and
`predict`, with the loss history printed instead of progress bars; no plots. Kept: `create_sequences`,
the Conv1D/Conv1DTranspose autoencoder, `fit(batch_size=128, validation_split=0.1)` with
EarlyStopping, and `model.predict` on all the training sequences and then all the test sequences (no
multiple of its batch of 32), the threshold from the training MAE and the anomaly indices.
"""

import argparse

import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=672, help="points in each series (48 a day)")
args = parser.parse_args()
keras.utils.set_random_seed(args.seed)

TIME_STEPS = 48


def daily_series(n, rng, jump_at=None):
    """A value every 30 minutes: a daytime bump, small noise, and optionally a jump up for a while."""
    t = np.arange(n)
    values = 20 + 60 * (np.sin(2 * np.pi * (t % TIME_STEPS) / TIME_STEPS) > 0.3) + rng.normal(0, 2, size=n)
    if jump_at is not None:
        values[jump_at:jump_at + TIME_STEPS // 4] += 80
    return values.reshape(-1, 1).astype("float32")


rng = np.random.default_rng(args.seed)
small_noise = daily_series(args.size, rng)
daily_jumpsup = daily_series(args.size, rng, jump_at=(args.size * 2) // 3)

training_mean = small_noise.mean()
training_std = small_noise.std()
training_value = (small_noise - training_mean) / training_std
print("Number of training samples:", len(training_value))


def create_sequences(values, time_steps=TIME_STEPS):
    output = []
    for i in range(len(values) - time_steps + 1):
        output.append(values[i : (i + time_steps)])
    return np.stack(output)


x_train = create_sequences(training_value)
print("Training input shape: ", x_train.shape)

model = keras.Sequential(
    [
        layers.Input(shape=(x_train.shape[1], x_train.shape[2])),
        layers.Conv1D(filters=32, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Dropout(rate=0.2),
        layers.Conv1D(filters=16, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Conv1DTranspose(filters=16, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Dropout(rate=0.2),
        layers.Conv1DTranspose(filters=32, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Conv1DTranspose(filters=1, kernel_size=7, padding="same"),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="mse")

history = model.fit(
    x_train,
    x_train,
    epochs=5,
    batch_size=128,
    validation_split=0.1,
    callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, mode="min")],
    verbose=0,
)
print("loss:", " ".join(f"{v:.5f}" for v in history.history["loss"]))
print("val_loss:", " ".join(f"{v:.5f}" for v in history.history["val_loss"]))

# Get train MAE loss.
x_train_pred = model.predict(x_train, verbose=0)
train_mae_loss = np.mean(np.abs(x_train_pred - x_train), axis=1)

# Get reconstruction loss threshold.
threshold = np.max(train_mae_loss)
print(f"Reconstruction error threshold: {threshold:.5f}")

test_value = (daily_jumpsup - training_mean) / training_std
x_test = create_sequences(test_value)
print("Test input shape: ", x_test.shape)

# Get test MAE loss.
x_test_pred = model.predict(x_test, verbose=0)
test_mae_loss = np.mean(np.abs(x_test_pred - x_test), axis=1)
test_mae_loss = test_mae_loss.reshape(-1)

# Detect all the samples which are anomalies.
anomalies = test_mae_loss > threshold
print("Number of anomaly samples: ", np.sum(anomalies))
print("Indices of anomaly samples: ", np.where(anomalies)[0].tolist())

# data i is an anomaly if samples [(i - timesteps + 1) to (i)] are anomalies
anomalous_data_indices = []
for data_idx in range(TIME_STEPS - 1, len(test_value) - TIME_STEPS + 1):
    if np.all(anomalies[data_idx - TIME_STEPS + 1 : data_idx]):
        anomalous_data_indices.append(data_idx)
print("Anomalous data indices:", anomalous_data_indices)
