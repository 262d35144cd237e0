"""A train step built by a factory called every epoch, with a learning rate decayed per epoch as a Python float.

Two mistakes of a hand-written loop: ``make_train_step(0.01)`` inside the epoch loop makes a new
tf.function (an empty trace cache) each epoch, and the float ``lr`` retraces even the one object
the factory would make if it were called once. Seventy epochs: more objects than a recorded run keeps
alive for TensorFlow to be asked about (64), so the first round cannot ask whether lr may be a tensor.
Used by tests/test_fix_converge_real.py.
"""

import argparse

import tensorflow as tf


def make_train_step(l2):
    @tf.function
    def train_step(w, x, y, lr):
        with tf.GradientTape() as tape:
            tape.watch(w)
            error = tf.linalg.matvec(x, w) - y
            loss = tf.reduce_mean(tf.square(error)) + l2 * tf.reduce_sum(tf.square(w))
        return w - lr * tape.gradient(loss, w), loss

    return train_step


parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
parser.add_argument("--size", type=int, default=64, help="examples")
parser.add_argument("--epochs", type=int, default=70, help="epochs")
args = parser.parse_args()

x = tf.random.stateless_normal([args.size, 3], seed=[args.seed, 1])
y = tf.linalg.matvec(x, tf.constant([1.0, -2.0, 0.5]))
w = tf.zeros([3])
for epoch in range(args.epochs):
    train_step = make_train_step(0.01)
    lr = 0.1 / (1 + epoch % 8)  # a schedule restarted every 8 epochs
    w, loss = train_step(w, x, y, lr)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
print("w", [round(v, 3) for v in w.numpy().tolist()])
