"""Held-out: simple audio recognition, trained with fit and exported as a two-signature tf.Module.

Source: tensorflow/docs, site/en/tutorials/audio/simple_audio.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: --size synthetic one-second 16 kHz wav files in 3 classes (tones of different pitch plus
noise) written to a temporary folder instead of the mini Speech Commands download, batch 8,
2 epochs, a smaller CNN, no plots. Kept: `audio_dataset_from_directory`, the `squeeze` and
`get_spectrogram` dataset maps, `Normalization.adapt`, fit/evaluate/predict, and `ExportModel`, whose
`@tf.function __call__` gets two concrete functions (a file name string, a batch of waveforms),
is called with a file name, saved, reloaded and called with a waveform.
"""

import argparse
import atexit
import pathlib
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers, models

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=60, help="wav files")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

tmp = pathlib.Path(tempfile.mkdtemp(prefix="heldout-audio-"))
atexit.register(shutil.rmtree, tmp, True)
data_dir = tmp / "mini_speech_commands"
rng = np.random.default_rng(args.seed)
for i in range(args.size):
    label, pitch = [("down", 220.0), ("no", 440.0), ("yes", 880.0)][i % 3]
    (data_dir / label).mkdir(parents=True, exist_ok=True)
    t = np.arange(16000) / 16000.0
    wave = 0.5 * np.sin(2 * np.pi * pitch * t) + 0.2 * rng.standard_normal(16000)
    wav = tf.audio.encode_wav(np.clip(wave, -1, 1).astype(np.float32)[:, None], 16000)
    tf.io.write_file(str(data_dir / label / f"{i:04d}_nohash_0.wav"), wav)

commands = np.array(sorted(tf.io.gfile.listdir(str(data_dir))))
print("Commands:", commands)
train_ds, val_ds = tf.keras.utils.audio_dataset_from_directory(
    directory=data_dir, batch_size=8, validation_split=0.2, seed=0,
    output_sequence_length=16000, subset="both", verbose=False)
label_names = np.array(train_ds.class_names)


def squeeze(audio, labels):
    audio = tf.squeeze(audio, axis=-1)
    return audio, labels


train_ds = train_ds.map(squeeze, tf.data.AUTOTUNE)
val_ds = val_ds.map(squeeze, tf.data.AUTOTUNE)
test_ds = val_ds.shard(num_shards=2, index=0)
val_ds = val_ds.shard(num_shards=2, index=1)
for example_audio, example_labels in train_ds.take(1):
    print(example_audio.shape, example_labels.shape)


def get_spectrogram(waveform):
    spectrogram = tf.signal.stft(waveform, frame_length=255, frame_step=128)
    spectrogram = tf.abs(spectrogram)
    return spectrogram[..., tf.newaxis]


for i in range(3):
    print("Spectrogram shape:", get_spectrogram(example_audio[i]).shape)


def make_spec_ds(ds):
    return ds.map(map_func=lambda audio, label: (get_spectrogram(audio), label), num_parallel_calls=tf.data.AUTOTUNE)


train_spectrogram_ds = make_spec_ds(train_ds)
val_spectrogram_ds = make_spec_ds(val_ds)
test_spectrogram_ds = make_spec_ds(test_ds)
for example_spectrograms, example_spect_labels in train_spectrogram_ds.take(1):
    break
train_spectrogram_ds = train_spectrogram_ds.cache().shuffle(10000, seed=args.seed).prefetch(tf.data.AUTOTUNE)
val_spectrogram_ds = val_spectrogram_ds.cache().prefetch(tf.data.AUTOTUNE)
test_spectrogram_ds = test_spectrogram_ds.cache().prefetch(tf.data.AUTOTUNE)

input_shape = example_spectrograms.shape[1:]
norm_layer = layers.Normalization()
norm_layer.adapt(data=train_spectrogram_ds.map(map_func=lambda spec, label: spec))
model = models.Sequential([
    layers.Input(shape=input_shape),
    layers.Resizing(32, 32),
    norm_layer,
    layers.Conv2D(8, 3, activation="relu"),
    layers.MaxPooling2D(),
    layers.Dropout(0.25),
    layers.Flatten(),
    layers.Dense(16, activation="relu"),
    layers.Dense(len(label_names)),
])
model.compile(optimizer=tf.keras.optimizers.Adam(),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
history = model.fit(train_spectrogram_ds, validation_data=val_spectrogram_ds, epochs=2, verbose=0,
                    callbacks=tf.keras.callbacks.EarlyStopping(verbose=1, patience=2))
print("loss", [round(v, 4) for v in history.history["loss"]])
print("evaluate", {k: round(v, 4) for k, v in model.evaluate(test_spectrogram_ds, return_dict=True, verbose=0).items()})
y_pred = tf.argmax(model.predict(test_spectrogram_ds, verbose=0), axis=1)
y_true = tf.concat(list(test_spectrogram_ds.map(lambda s, lab: lab)), axis=0)
print("confusion", tf.math.confusion_matrix(y_true, y_pred).numpy().tolist())

x = data_dir / "no" / "0001_nohash_0.wav"
x = tf.io.read_file(str(x))
x, sample_rate = tf.audio.decode_wav(x, desired_channels=1, desired_samples=16000)
x = tf.squeeze(x, axis=-1)
waveform = x
x = get_spectrogram(x)[tf.newaxis, ...]
print("prediction", [round(float(p), 4) for p in tf.nn.softmax(model(x)[0])])


class ExportModel(tf.Module):
    def __init__(self, model):
        self.model = model
        self.__call__.get_concrete_function(x=tf.TensorSpec(shape=(), dtype=tf.string))
        self.__call__.get_concrete_function(x=tf.TensorSpec(shape=[None, 16000], dtype=tf.float32))

    @tf.function
    def __call__(self, x):
        if x.dtype == tf.string:
            x = tf.io.read_file(x)
            x, _ = tf.audio.decode_wav(x, desired_channels=1, desired_samples=16000)
            x = tf.squeeze(x, axis=-1)
            x = x[tf.newaxis, :]
        x = get_spectrogram(x)
        result = self.model(x, training=False)
        class_ids = tf.argmax(result, axis=-1)
        class_names = tf.gather(label_names, class_ids)
        return {"predictions": result, "class_ids": class_ids, "class_names": class_names}


export = ExportModel(model)
print("export", export(tf.constant(str(data_dir / "no" / "0001_nohash_0.wav")))["class_names"].numpy())
tf.saved_model.save(export, str(tmp / "saved"))
imported = tf.saved_model.load(str(tmp / "saved"))
print("imported", imported(waveform[tf.newaxis, :])["class_ids"].numpy())
