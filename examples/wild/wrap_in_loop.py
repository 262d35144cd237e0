"""Wild case: `tf.function(f)` made again on every pass of a loop that also feeds it new lengths.

Each pass makes a new tf.function (an empty cache), and each length is new as well: both causes at
once. Making it once before the loop still traces once per length; with an input_signature open
in that dimension, written into the moved line, one trace serves every pass.

Run: tfretrace run --save s.json examples/wild/wrap_in_loop.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="the first value of every sequence")
parser.add_argument("--size", type=int, default=4, help="lengths")
args = parser.parse_args()


def total(x):
    return tf.reduce_sum(x * x)


for length in (3, 5, 8, 13, 21, 34)[: args.size]:
    total_fn = tf.function(total)
    print(length, float(total_fn(tf.range(args.seed, length + args.seed, dtype=tf.float32))))
