"""Keras predict in a serving loop: varying batch sizes, and a new model per request.

Requests come in with different numbers of rows. Keras 3 builds predict_function with
reduce_retracing=True, so the first new batch size traces once more with a None batch
dimension and then every size reuses it. Building (or loading) a model per request is worse:
each model has its own predict_function and traces again, and TensorFlow's warning counts
them together because they share code. Fix: build the model once and reuse it.
"""

import numpy as np
import tensorflow as tf


def build_model():
    return tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="the rows drawn")
    parser.add_argument("--size", type=int, default=20, help="rows of the largest request")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    model = build_model()
    for rows in (args.size // 2, args.size, args.size * 7 // 20, args.size * 13 // 20):
        model.predict(rng.random((rows, 4)).astype("float32"), verbose=0)
    print("shared model, predict traces:", model.predict_function.experimental_get_tracing_count())

    for _ in range(3):
        per_request = build_model()
        per_request.predict(rng.random((args.size // 4, 4)).astype("float32"), verbose=0)
    print("model per request: each new model traced its own predict_function")
