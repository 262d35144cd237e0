import tensorflow as tf


def step_fn(v):
    @tf.function
    def double(v):
        return v * 2.0
    return double(v)


for _ in range(3):
    print(float(tf.reduce_sum(step_fn(tf.constant([1.0, 2.0])))))
