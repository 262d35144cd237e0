import tensorflow as tf


def as_fraction(rate):
    return rate if isinstance(rate, float) else rate / 100  # a percentage given as a number


@tf.function
def scaled(x, rate):
    return tf.reduce_sum(x) * as_fraction(rate)


for n, rate in ((2, 0.1), (3, 0.2), (4, 0.3)):
    print("p14", round(float(scaled(tf.ones([n]), rate)), 6))
