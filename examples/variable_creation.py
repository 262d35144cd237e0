"""Lazy variable creation on the first call (expected: one extra trace).

A layer that creates its weights the first time it sees an input is traced twice on its first
call: once while creating the variables, and once more without creating them. This happens
once per tf.function object and is not a problem; re-creating the object would be.
"""

import tensorflow as tf


class LazyDense(tf.Module):
    def __init__(self, units):
        super().__init__()
        self.units = units
        self.kernel = None

    @tf.function
    def __call__(self, x):
        if self.kernel is None:
            self.kernel = tf.Variable(tf.random.normal([x.shape[-1], self.units]))
        return tf.matmul(x, self.kernel)


if __name__ == "__main__":
    layer = LazyDense(3)
    for _ in range(3):
        print(layer(tf.ones([2, 4])).shape)
    print("traces:", layer.__call__.experimental_get_tracing_count())
