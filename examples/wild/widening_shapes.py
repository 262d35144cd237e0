"""Wild case: Batches whose sequence length keeps growing (and some smaller batch sizes).

Run: tfretrace run --fix-plan --save s.json examples/wild/widening_shapes.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every sequence length")
parser.add_argument("--size", type=int, default=8, help="the largest batch")
args = parser.parse_args()


@tf.function
def encode(tokens, mask):
    return tf.reduce_sum(tf.cast(tokens, tf.float32) * mask, axis=1)

n = args.size
for batch, length in [(n, 5), (n, 7), (n // 2, 9), (n, 12), (n // 4, 3)]:
    length += args.seed
    print(encode(tf.ones([batch, length], tf.int32), tf.ones([batch, length])).numpy().tolist())
