"""Wild case: A loss taking a Python int class index: every new int is a new graph.

Run: tfretrace run --fix-plan --save s.json examples/wild/class_index.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every label, modulo 10")
parser.add_argument("--size", type=int, default=8, help="labels")
args = parser.parse_args()


@tf.function
def class_loss(logits, label):
    target = tf.one_hot(label, 10)
    return tf.reduce_mean(tf.square(logits - target))

logits = tf.range(10, dtype=tf.float32) / 10.0
for label in [(label + args.seed) % 10 for label in [3, 1, 4, 1, 5, 9, 2, 6] * 2][: args.size]:
    print(label, round(float(class_loss(logits, label)), 4))
