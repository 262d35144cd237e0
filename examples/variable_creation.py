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
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every input (0: all ones)")
    parser.add_argument("--size", type=int, default=2, help="rows")
    args = parser.parse_args()
    layer = LazyDense(3)
    for _ in range(3):
        print(layer(tf.ones([args.size, 4]) + args.seed).shape)
    print("traces:", layer.__call__.experimental_get_tracing_count())
