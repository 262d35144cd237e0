"""A tf.function created inside the loop, and an inner function built per batch.

Every tf.function object has its own trace cache. Wrapping the loss in tf.function inside the
batch loop, or building the step in a helper called per batch, starts from an empty cache each
time: one trace per batch even though the signature never changes. Fix: create it once.
"""

import tensorflow as tf


def compute_loss(predictions, targets):
    return tf.reduce_mean(tf.square(predictions - targets))


def make_scaler(factor):
    @tf.function
    def scale(x):
        return x * factor

    return scale


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every prediction (0: all ones)")
    parser.add_argument("--size", type=int, default=8, help="elements")
    args = parser.parse_args()
    predictions, targets = tf.fill([args.size], 1.0 + args.seed), tf.zeros([args.size])
    for step in range(4):
        loss_fn = tf.function(compute_loss)
        print(step, float(loss_fn(predictions, targets)))

    for step in range(3):
        scaler = make_scaler(2.0)
        print(step, scaler(predictions).numpy()[0])
