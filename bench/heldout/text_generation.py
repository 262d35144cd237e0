"""Held-out: character-level text generation with an RNN (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/text/text_generation.ipynb at commit
3b9fe704cb8f303d81586f3861c388a7c171e3c5 (now in tensorflow/text). License: Apache-2.0.
Reduced: a synthetic text of --size characters instead of the Shakespeare download, a small
GRU (32 units), 1 fit epoch of each model and 2 custom-loop epochs, 20 generated characters instead of 1000,
Keras 3 names (`StringLookup`, `reset_state`, `get_initial_state(batch_size)`). Kept: the `OneStep`
generator's `@tf.function generate_one_step` called with `states=None` then with its own states,
with 1 and then 5 prompts, its SavedModel round trip, and `CustomTraining.train_step` called per batch.
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=3000, help="characters of text")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)
words = ["romeo", "juliet", "the", "night", "love", "and", "thou", "art", "fair", "sweet"]
text = ""
while len(text) < args.size:
    text += " ".join(rng.choice(words, 8)) + ".\n"
text = text[: args.size]
vocab = sorted(set(text))
ids_from_chars = tf.keras.layers.StringLookup(vocabulary=list(vocab), mask_token=None)
chars_from_ids = tf.keras.layers.StringLookup(
    vocabulary=ids_from_chars.get_vocabulary(), invert=True, mask_token=None)

all_ids = ids_from_chars(tf.strings.unicode_split(text, "UTF-8"))
ids_dataset = tf.data.Dataset.from_tensor_slices(all_ids)
seq_length = 20
sequences = ids_dataset.batch(seq_length + 1, drop_remainder=True)


def split_input_target(sequence):
    return sequence[:-1], sequence[1:]


dataset = sequences.map(split_input_target)
BATCH_SIZE = 16
dataset = dataset.shuffle(1000, seed=args.seed).batch(BATCH_SIZE, drop_remainder=True).prefetch(2)
vocab_size = len(ids_from_chars.get_vocabulary())
embedding_dim, rnn_units = 16, 32


class MyModel(tf.keras.Model):
    def __init__(self, vocab_size, embedding_dim, rnn_units):
        super().__init__()
        self.embedding = tf.keras.layers.Embedding(vocab_size, embedding_dim)
        self.gru = tf.keras.layers.GRU(rnn_units, return_sequences=True, return_state=True)
        self.dense = tf.keras.layers.Dense(vocab_size)

    def call(self, inputs, states=None, return_state=False, training=False):
        x = self.embedding(inputs, training=training)
        if states is None:
            states = self.gru.get_initial_state(tf.shape(x)[0])
        x, states = self.gru(x, initial_state=states, training=training)
        x = self.dense(x, training=training)
        return (x, states) if return_state else x


loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model = MyModel(vocab_size, embedding_dim, rnn_units)
model.compile(optimizer="adam", loss=loss)
history = model.fit(dataset, epochs=1, verbose=0)
print("fit loss", round(float(history.history["loss"][-1]), 4))


class OneStep(tf.keras.Model):
    def __init__(self, model, chars_from_ids, ids_from_chars, temperature=1.0):
        super().__init__()
        self.temperature = temperature
        self.model = model
        self.chars_from_ids = chars_from_ids
        self.ids_from_chars = ids_from_chars
        skip_ids = self.ids_from_chars(["[UNK]"])[:, None]
        sparse_mask = tf.SparseTensor(
            values=[-float("inf")] * len(skip_ids), indices=skip_ids,
            dense_shape=[len(ids_from_chars.get_vocabulary())])
        self.prediction_mask = tf.sparse.to_dense(sparse_mask)

    @tf.function
    def generate_one_step(self, inputs, states=None):
        input_chars = tf.strings.unicode_split(inputs, "UTF-8")
        input_ids = self.ids_from_chars(input_chars).to_tensor()
        predicted_logits, states = self.model(inputs=input_ids, states=states, return_state=True)
        predicted_logits = predicted_logits[:, -1, :] / self.temperature
        predicted_logits = predicted_logits + self.prediction_mask
        predicted_ids = tf.squeeze(tf.random.categorical(predicted_logits, num_samples=1), axis=-1)
        return self.chars_from_ids(predicted_ids), states


one_step_model = OneStep(model, chars_from_ids, ids_from_chars)
for prompts in (["ROMEO:"], ["ROMEO:"] * 5):
    states = None
    next_char = tf.constant(prompts)
    result = [next_char]
    for _ in range(20):
        next_char, states = one_step_model.generate_one_step(next_char, states=states)
        result.append(next_char)
    print([s.decode("utf-8") for s in tf.strings.join(result).numpy()])

with tempfile.TemporaryDirectory() as tmp:
    tf.saved_model.save(one_step_model, os.path.join(tmp, "one_step"))
    one_step_reloaded = tf.saved_model.load(os.path.join(tmp, "one_step"))
states = None
next_char = tf.constant(["ROMEO:"])
result = [next_char]
for _ in range(10):
    next_char, states = one_step_reloaded.generate_one_step(next_char, states=states)
    result.append(next_char)
print("reloaded", tf.strings.join(result)[0].numpy().decode("utf-8"))


class CustomTraining(MyModel):
    @tf.function
    def train_step(self, inputs):
        inputs, labels = inputs
        with tf.GradientTape() as tape:
            predictions = self(inputs, training=True)
            loss = self.loss(labels, predictions)
        grads = tape.gradient(loss, model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return {"loss": loss}


model = CustomTraining(vocab_size, embedding_dim, rnn_units)
model.compile(optimizer=tf.keras.optimizers.Adam(),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dataset, epochs=1, verbose=0)
mean = tf.keras.metrics.Mean()
for epoch in range(2):
    mean.reset_state()
    for batch_n, (inp, target) in enumerate(dataset):
        logs = model.train_step([inp, target])
        mean.update_state(logs["loss"])
        if batch_n % 5 == 0:
            print(f"Epoch {epoch + 1} Batch {batch_n} Loss {float(logs['loss']):.4f}")
    print(f"Epoch {epoch + 1} Loss: {float(mean.result()):.4f}")
