"""Wild case: Batches whose sequence length keeps growing (and some smaller batch sizes).

Run: tfretrace run --fix-plan --save s.json examples/wild/widening_shapes.py, then tfretrace fix s.json.
"""

import tensorflow as tf


@tf.function
def encode(tokens, mask):
    return tf.reduce_sum(tf.cast(tokens, tf.float32) * mask, axis=1)

for batch, length in [(8, 5), (8, 7), (4, 9), (8, 12), (2, 3)]:
    print(encode(tf.ones([batch, length], tf.int32), tf.ones([batch, length])).numpy().tolist())
