import numpy as np
import tensorflow as tf


@tf.function
def norm(x):
    return tf.reduce_sum(x * x)


print(float(norm(tf.constant([1.0, 2.0], dtype=tf.float32))))
print(float(norm(np.array([1.0, 2.0], dtype=np.float64))))
