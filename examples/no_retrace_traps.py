"""Article myths that do NOT retrace on TF 2.21, and the frozen-value trap that does bite.

* A Python `if` on a tensor is converted by AutoGraph into tf.cond: one trace for all values.
* random.random() inside a tf.function runs once, while tracing: its value is frozen into the
  graph. No retrace, but every call returns the same "random" number (use tf.random instead).
* Changing a Python global read inside the function does not retrace either: the old value
  stays baked in. Pass it as an argument (a tensor) or keep it in a tf.Variable.
"""

import random

import tensorflow as tf

THRESHOLD = 0.5


@tf.function
def clip_or_scale(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return -x


@tf.function
def add_noise(x):
    return x + random.random()


@tf.function
def above_threshold(x):
    return tf.cast(x > THRESHOLD, tf.float32)


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to clip_or_scale's inputs")
    parser.add_argument("--size", type=int, default=3, help="calls of add_noise")
    args = parser.parse_args()
    print(clip_or_scale(tf.constant([1.0, 2.0]) + args.seed).numpy(),
          clip_or_scale(tf.constant([-1.0, -2.0]) - args.seed).numpy())

    noisy = [float(add_noise(tf.constant(0.0))) for _ in range(args.size)]
    print("random.random() inside the function, three calls:", noisy, "(frozen)")

    x = tf.constant([0.3, 0.6, 0.9])
    print("threshold 0.5:", above_threshold(x).numpy())
    THRESHOLD = 0.8
    print("threshold changed to 0.8, same graph:", above_threshold(x).numpy(), "(still uses 0.5)")

    counts = {f.__name__: f.experimental_get_tracing_count() for f in (clip_or_scale, add_noise, above_threshold)}
    print("traces per function:", counts, "- no retrace")
