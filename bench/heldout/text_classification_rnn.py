"""Held-out: sentiment classification with an RNN on padded batches (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/text/text_classification_rnn.ipynb at commit
02b796f30713c373d7a3df6736d7b9340445a506. License: Apache-2.0.
Reduced: --size synthetic reviews of 5 to 80 words (half as many test reviews) with a word-level
encoder standing in for TFDS's imdb_reviews/subwords8k and its SubwordTextEncoder, LSTM widths
16/8 and Dense 16 instead of 64/32 and 64, 2 epochs and 2 validation steps instead of 10 and 30,
the second (stacked) model trained 1 epoch, Adam's learning rate 1e-3 instead of 1e-4 (so 2
epochs move the outputs), no plots. Kept: `padded_batch(BATCH_SIZE)` padding each
batch to its longest review, `model.fit(train_dataset, validation_data=test_dataset,
validation_steps=...)`, `model.evaluate(test_dataset)`, and `sample_predict` calling
`model.predict` on one encoded review without and then with `pad_to_size(..., 64)`.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=256, help="training reviews")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)
good = ["cool", "great", "recommend", "wonderful", "loved", "best"]
bad = ["boring", "awful", "waste", "worst", "dull", "hated"]
neutral = ["the", "movie", "was", "and", "animation", "graphics", "were", "out", "of", "this",
           "world", "i", "would", "plot", "actors", "film", "a", "it"]


class WordEncoder:
    """Stands in for tfds.deprecated.text.SubwordTextEncoder: `vocab_size` and `encode`."""

    def __init__(self, words):
        self.index = {w: i + 1 for i, w in enumerate(words)}
        self.vocab_size = len(words) + 2

    def encode(self, text):
        words = text.lower().replace(".", " ").split()
        return [self.index.get(w, self.vocab_size - 1) for w in words]


encoder = WordEncoder(good + bad + neutral)


def synthetic_reviews(n):
    texts, labels = [], []
    for _ in range(n):
        label = int(rng.integers(0, 2))
        words = list(rng.choice(neutral, int(rng.integers(5, 80))))
        for _ in range(int(rng.integers(1, 4))):
            words.insert(int(rng.integers(0, len(words))), str(rng.choice(good if label else bad)))
        texts.append(" ".join(words))
        labels.append(label)
    encoded = [encoder.encode(t) for t in texts]
    return tf.data.Dataset.from_generator(
        lambda: iter(zip(encoded, labels)),
        output_signature=(tf.TensorSpec([None], tf.int64), tf.TensorSpec([], tf.int64)))


train_examples, test_examples = synthetic_reviews(args.size), synthetic_reviews(args.size // 2)
print(f"Vocabulary size: {encoder.vocab_size}")

BUFFER_SIZE = 10000
BATCH_SIZE = 64

train_dataset = (train_examples
                 .shuffle(BUFFER_SIZE, seed=args.seed)
                 .padded_batch(BATCH_SIZE))

test_dataset = (test_examples
                .padded_batch(BATCH_SIZE))

model = tf.keras.Sequential([
    tf.keras.layers.Embedding(encoder.vocab_size, 16),
    tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(1)
])

model.compile(loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
              optimizer=tf.keras.optimizers.Adam(1e-3),
              metrics=["accuracy"])

history = model.fit(train_dataset, epochs=2,
                    validation_data=test_dataset,
                    validation_steps=2, verbose=0)
print("loss", [round(v, 4) for v in history.history["loss"]],
      "val_loss", [round(v, 4) for v in history.history["val_loss"]])

test_loss, test_acc = model.evaluate(test_dataset, verbose=0)

print(f"Test Loss: {test_loss:.4f}")
print(f"Test Accuracy: {test_acc:.4f}")


def pad_to_size(vec, size):
    zeros = [0] * (size - len(vec))
    vec.extend(zeros)
    return vec


def sample_predict(sample_pred_text, pad):
    encoded_sample_pred_text = encoder.encode(sample_pred_text)

    if pad:
        encoded_sample_pred_text = pad_to_size(encoded_sample_pred_text, 64)
    encoded_sample_pred_text = tf.cast(encoded_sample_pred_text, tf.float32)
    predictions = model.predict(tf.expand_dims(encoded_sample_pred_text, 0), verbose=0)

    return (predictions)


# predict on a sample text without padding.

sample_pred_text = ("The movie was cool. The animation and the graphics "
                    "were out of this world. I would recommend this movie.")
predictions = sample_predict(sample_pred_text, pad=False)
print(np.round(predictions, 4))

# predict on a sample text with padding

predictions = sample_predict(sample_pred_text, pad=True)
print(np.round(predictions, 4))

model = tf.keras.Sequential([
    tf.keras.layers.Embedding(encoder.vocab_size, 16),
    tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16, return_sequences=True)),
    tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(8)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(1)
])

model.compile(loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
              optimizer=tf.keras.optimizers.Adam(1e-3),
              metrics=["accuracy"])

history = model.fit(train_dataset, epochs=1,
                    validation_data=test_dataset,
                    validation_steps=2, verbose=0)

test_loss, test_acc = model.evaluate(test_dataset, verbose=0)

print(f"Test Loss: {test_loss:.4f}")
print(f"Test Accuracy: {test_acc:.4f}")

# predict on a sample text without padding.

predictions = sample_predict(sample_pred_text, pad=False)
print(np.round(predictions, 4))

# predict on a sample text with padding

predictions = sample_predict(sample_pred_text, pad=True)
print(np.round(predictions, 4))
