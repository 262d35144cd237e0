"""Held-out: music generation with an LSTM, one `model.predict` call per generated note.

Source: tensorflow/docs, site/en/tutorials/audio/music_generation.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: --size synthetic notes (pitch, step, duration) instead of MIDI files parsed with
pretty_midi, a 16-unit LSTM, batch 16, 2 epochs, 10 generated notes, no checkpoints, MIDI or plots;
`int(pitch[0])` where NumPy 2 refuses `int()` of a 1-element array.
Kept: the windowed `create_sequences` pipeline with its `split_labels` map, the dict-output model
with the custom `mse_with_positive_pressure` loss compiled twice and evaluated, fit with early
stopping, and `predict_next_note` calling `model.predict` on one window at a time with a float temperature.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=300, help="training notes")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

key_order = ["pitch", "step", "duration"]
rng = np.random.default_rng(args.seed)
raw_notes = {
    "pitch": rng.integers(40, 90, args.size).astype(np.float64),
    "step": rng.exponential(0.2, args.size),
    "duration": rng.exponential(0.4, args.size),
}
n_notes = args.size
train_notes = np.stack([raw_notes[key] for key in key_order], axis=1)
notes_ds = tf.data.Dataset.from_tensor_slices(train_notes)


def create_sequences(dataset, seq_length, vocab_size=128):
    seq_length = seq_length + 1
    windows = dataset.window(seq_length, shift=1, stride=1, drop_remainder=True)

    def flatten(x):
        return x.batch(seq_length, drop_remainder=True)

    sequences = windows.flat_map(flatten)

    def scale_pitch(x):
        return x / [vocab_size, 1.0, 1.0]

    def split_labels(sequences):
        inputs = sequences[:-1]
        labels_dense = sequences[-1]
        labels = {key: labels_dense[i] for i, key in enumerate(key_order)}
        return scale_pitch(inputs), labels

    return sequences.map(split_labels, num_parallel_calls=tf.data.AUTOTUNE)


seq_length = 25
vocab_size = 128
seq_ds = create_sequences(notes_ds, seq_length, vocab_size)
for seq, target in seq_ds.take(1):
    print("sequence shape:", seq.shape)
batch_size = 16
buffer_size = n_notes - seq_length
train_ds = seq_ds.shuffle(buffer_size).batch(batch_size, drop_remainder=True).cache().prefetch(tf.data.AUTOTUNE)


def mse_with_positive_pressure(y_true, y_pred):
    mse = (y_true - y_pred) ** 2
    positive_pressure = 10 * tf.maximum(-y_pred, 0.0)
    return tf.reduce_mean(mse + positive_pressure)


input_shape = (seq_length, 3)
inputs = tf.keras.Input(input_shape)
x = tf.keras.layers.LSTM(16)(inputs)
outputs = {
    "pitch": tf.keras.layers.Dense(128, name="pitch")(x),
    "step": tf.keras.layers.Dense(1, name="step")(x),
    "duration": tf.keras.layers.Dense(1, name="duration")(x),
}
model = tf.keras.Model(inputs, outputs)
loss = {
    "pitch": tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    "step": mse_with_positive_pressure,
    "duration": mse_with_positive_pressure,
}
optimizer = tf.keras.optimizers.Adam(learning_rate=0.005)
model.compile(loss=loss, optimizer=optimizer)
print("evaluate", round(model.evaluate(train_ds, return_dict=True, verbose=0)["loss"], 4))
model.compile(loss=loss, loss_weights={"pitch": 0.05, "step": 1.0, "duration": 1.0}, optimizer=optimizer)
print("evaluate weighted", round(model.evaluate(train_ds, return_dict=True, verbose=0)["loss"], 4))
callbacks = [tf.keras.callbacks.EarlyStopping(monitor="loss", patience=5, verbose=1, restore_best_weights=True)]
history = model.fit(train_ds, epochs=2, callbacks=callbacks, verbose=0)
print("loss", [round(v, 4) for v in history.history["loss"]])


def predict_next_note(notes, model, temperature=1.0):
    assert temperature > 0
    inputs = tf.expand_dims(notes, 0)
    predictions = model.predict(inputs, verbose=0)
    pitch_logits = predictions["pitch"]
    step = predictions["step"]
    duration = predictions["duration"]
    pitch_logits /= temperature
    pitch = tf.random.categorical(pitch_logits, num_samples=1)
    pitch = tf.squeeze(pitch, axis=-1)
    duration = tf.squeeze(duration, axis=-1)
    step = tf.squeeze(step, axis=-1)
    step = tf.maximum(0, step)
    duration = tf.maximum(0, duration)
    return int(pitch[0]), float(step[0]), float(duration[0])  # [0]: NumPy 2 converts no 1-element array


temperature = 2.0
num_predictions = 10
sample_notes = np.stack([raw_notes[key] for key in key_order], axis=1)
input_notes = sample_notes[:seq_length] / np.array([vocab_size, 1, 1])
generated_notes = []
prev_start = 0
for _ in range(num_predictions):
    pitch, step, duration = predict_next_note(input_notes, model, temperature)
    start = prev_start + step
    end = start + duration
    input_note = (pitch, step, duration)
    generated_notes.append((*input_note, start, end))
    input_notes = np.delete(input_notes, 0, axis=0)
    input_notes = np.append(input_notes, np.expand_dims(input_note, 0), axis=0)
    prev_start = start
for note in generated_notes[:5]:
    print("note", note[0], *(round(v, 4) for v in note[1:]))
