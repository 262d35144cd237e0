"""tf.vectorized_map called eagerly: TensorFlow traces a new function on every call.

A per-example gradient-norm style computation vectorized with tf.vectorized_map and called
from a plain Python loop. Called eagerly, pfor wraps the loop in a brand new tf.function each
time (TensorFlow's warning names pfor.<locals>.f), so every call traces and vectorizes again.
Wrapped once in a tf.function, the same loop traces once.
"""

import tensorflow as tf


def per_example(row):
    return tf.reduce_sum(row * row)


@tf.function
def norms(batch):
    return tf.vectorized_map(per_example, batch)


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every value (0: all ones)")
    parser.add_argument("--size", type=int, default=8, help="rows")
    args = parser.parse_args()
    batch = tf.ones([args.size, 4]) + args.seed
    for _ in range(4):
        print(tf.vectorized_map(per_example, batch).shape)  # a new trace per call
    for _ in range(4):
        print(norms(batch).shape)  # pfor traced into norms' one graph
    print("traces of norms:", norms.experimental_get_tracing_count())
