"""A list of variable length and a dict with an optional key.

Lists and dicts are unpacked into the trace key: a list with one more element, or a dict
that sometimes carries a "mask" entry, is a different structure and traces again (structures
are never generalized, not even with reduce_retracing). Fix: stack the list into one tensor;
always pass the same keys (an all-ones mask when there is none).
"""

import tensorflow as tf


@tf.function
def sum_losses(losses):
    return tf.add_n(losses)


@tf.function
def masked_mean(features):
    values = features["values"]
    if "mask" in features:
        values = values * features["mask"]
    return tf.reduce_mean(values)


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every loss and value")
    parser.add_argument("--size", type=int, default=3, help="columns of values")
    args = parser.parse_args()
    a, b, c = (tf.constant(v + args.seed) for v in (1.0, 2.0, 3.0))
    print(float(sum_losses([a, b])))
    print(float(sum_losses([a, b, c])))  # one more auxiliary loss this step

    values = tf.ones([2, args.size]) + args.seed
    print(float(masked_mean({"values": values})))
    print(float(masked_mean({"values": values, "mask": tf.ones([2, args.size])})))
    print("traces:", sum_losses.experimental_get_tracing_count(), masked_mean.experimental_get_tracing_count())
