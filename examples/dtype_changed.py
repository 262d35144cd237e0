"""NumPy float64 versus float32.

A preprocessing function is called with float32 arrays from the data loader, then with an
array built by np.random.rand, which is float64. The new dtype is a new signature: a second
trace (and the graph now computes in float64). Fix: cast at the call site.
"""

import numpy as np
import tensorflow as tf


@tf.function
def normalize(images):
    mean = tf.reduce_mean(images, axis=0)
    std = tf.math.reduce_std(images, axis=0) + 1e-6
    return (images - mean) / std


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="np.random's draws")
    parser.add_argument("--size", type=int, default=8, help="rows")
    args = parser.parse_args()
    np.random.seed(args.seed)
    loaded = np.ones((args.size, 4), dtype=np.float32)
    print(normalize(loaded).dtype)
    print(normalize(loaded * 2).dtype)
    augmented = np.random.rand(args.size, 4)  # float64
    print(normalize(augmented).dtype)
    print("traces:", normalize.experimental_get_tracing_count())
