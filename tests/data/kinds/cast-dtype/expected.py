import numpy as np
import tensorflow as tf


@tf.function
def norm(x):
    return tf.reduce_sum(x * x)


print(float(norm(tf.cast(tf.constant([1.0, 2.0], dtype=tf.float32), tf.float32))))
print(float(norm(tf.cast(np.array([1.0, 2.0], dtype=np.float64), tf.float32))))
