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
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    print(float(sum_losses([a, b])))
    print(float(sum_losses([a, b, c])))  # one more auxiliary loss this step

    values = tf.ones([2, 3])
    print(float(masked_mean({"values": values})))
    print(float(masked_mean({"values": values, "mask": tf.ones([2, 3])})))
    print("traces:", sum_losses.experimental_get_tracing_count(), masked_mean.experimental_get_tracing_count())
