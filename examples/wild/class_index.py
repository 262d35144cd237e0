"""Wild case: A loss taking a Python int class index: every new int is a new graph.

Run: tfretrace run --fix-plan --save s.json examples/wild/class_index.py, then tfretrace fix s.json.
"""

import tensorflow as tf


@tf.function
def class_loss(logits, label):
    target = tf.one_hot(label, 10)
    return tf.reduce_mean(tf.square(logits - target))

logits = tf.range(10, dtype=tf.float32) / 10.0
for label in [3, 1, 4, 1, 5, 9, 2, 6]:
    print(label, round(float(class_loss(logits, label)), 4))
