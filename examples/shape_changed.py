"""Variable sequence lengths in a custom training step.

Sentences are batched by length without padding, so every new length is a new input shape
and the tf.function traces again. Fix: pad to a few fixed lengths, or give the step an
input_signature with a None time dimension (or reduce_retracing=True).
"""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)  # the same initial weights every run

VOCAB, BATCH = 50, 4

model = tf.keras.Sequential(
    [
        tf.keras.layers.Embedding(VOCAB, 8),
        tf.keras.layers.GlobalAveragePooling1D(),
        tf.keras.layers.Dense(1),
    ]
)
model.build((None, None))
optimizer = tf.keras.optimizers.SGD(0.1)
optimizer.build(model.trainable_variables)
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(tokens, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(tokens, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def batches(rng, rows=BATCH):
    for length in (5, 7, 9, 5, 7):
        tokens = rng.integers(0, VOCAB, size=(rows, length)).astype("int32")
        labels = rng.random((rows, 1)).astype("float32")
        yield tokens, labels


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="the tokens and labels drawn")
    parser.add_argument("--size", type=int, default=4, help="rows per batch")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for tokens, labels in batches(rng, args.size):
        loss = train_step(tokens, labels)
        print(f"length {tokens.shape[1]}: loss {float(loss):.4f}")
    print("traces:", train_step.experimental_get_tracing_count())
