"""XLA compiles again for every new input shape, with no retrace and no TensorFlow warning.

A jit_compile=True scoring step fed batches of variable sequence length, with
reduce_retracing=True so the tf.function stops retracing after the second length: its trace
is generalised to a None time dimension. XLA has a second cache keyed by the concrete shapes,
so every new length is compiled again (tens to hundreds of ms each), which TensorFlow never
reports. Under `tfretrace run` the report shows `traces 2, XLA compiles 5` and each recompile
as `tokens: shape (4, 7, 8) -> (4, 9, 8), dim 1`.
Fix: pad the lengths to a few buckets (`pad_to_bucket` below: one compile per bucket), or turn
XLA off for this function (jit_compile=False) when compiles outnumber calls.
"""

import numpy as np
import tensorflow as tf

BATCH, DIM = 4, 8
weights = tf.Variable(tf.random.stateless_normal([DIM, 1], seed=(1, 2)))


@tf.function(jit_compile=True, reduce_retracing=True)
def score(tokens):
    pooled = tf.reduce_mean(tokens, axis=1)
    return tf.reduce_mean(tf.matmul(pooled, weights))


def pad_to_bucket(tokens, buckets=(8, 16)):
    """The fix: pad the time dimension up to the next bucket, so XLA sees len(buckets) shapes."""
    length = tokens.shape[1]
    size = next(b for b in buckets if b >= length)
    return np.pad(tokens, ((0, 0), (0, size - length), (0, 0)))


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="the values drawn")
    parser.add_argument("--size", type=int, default=4, help="rows per batch")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for length in (5, 7, 9, 5, 11, 13, 7):
        batch = rng.random((args.size, length, DIM)).astype("float32")
        print(f"length {length:2d}: score {float(score(batch)):.4f}")
