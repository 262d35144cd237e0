"""Two text models (strings in, through TextVectorization) scored by one helper on tensors of a few sentences."""
import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
words = ["good", "bad", "movie", "great", "awful", "plot"]
rng = np.random.default_rng(int(sys.argv[1]) if sys.argv[1:] else 0)
corpus = [" ".join(rng.choice(words, 4)) for _ in range(16)]
encoder = keras.layers.TextVectorization(max_tokens=12, output_sequence_length=5)
encoder.adapt(corpus)


def build(depth):
    layers = [keras.Input(shape=(), dtype="string"), encoder, keras.layers.Embedding(12, 4)]
    layers += [keras.layers.Dense(4, activation="relu") for _ in range(depth)]
    return keras.Sequential([*layers, keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])


def score(model, sentences):
    return model.predict(tf.constant(sentences), verbose=0)


for depth in (1, 2):
    model = build(depth)
    for n in (1, 3):
        print("k_call_text", depth, n, score(model, corpus[:n]).round(5).tolist())
