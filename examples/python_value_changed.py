"""A learning rate passed as a Python number.

The learning rate decays once per epoch and is passed to the step as a Python float. Python
numbers are baked into the graph as constants, so every new value traces a new graph.
Fix: pass tf.constant(lr), or keep the rate in a tf.Variable and assign to it.
"""

import numpy as np
import tensorflow as tf

w = tf.Variable(tf.zeros([4, 1]))


@tf.function
def train_step(x, y, learning_rate):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    w.assign_sub(learning_rate * tape.gradient(loss, w))
    return loss


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="the rows drawn")
    parser.add_argument("--size", type=int, default=16, help="rows")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    x = rng.random((args.size, 4)).astype("float32")
    y = rng.random((args.size, 1)).astype("float32")
    learning_rate = 0.1
    for epoch in range(4):
        for _ in range(3):
            loss = train_step(x, y, learning_rate)
        print(f"epoch {epoch}: lr {learning_rate:.4f} loss {float(loss):.4f}")
        learning_rate *= 0.5
    print("traces:", train_step.experimental_get_tracing_count())
