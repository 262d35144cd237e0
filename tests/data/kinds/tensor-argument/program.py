import tensorflow as tf


@tf.function
def scaled(x, factor):
    return x * factor


for factor in (1.5, 2.5, 3.5):
    print(float(scaled(tf.constant(2.0), factor)))
