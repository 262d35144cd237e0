"""Wild case: `tf.function(f)` made again on every pass of a loop that also feeds it new lengths.

Each pass makes a new tf.function (an empty cache), and each length is new as well: both causes at
once. Making it once before the loop still traces once per length; with an input_signature open
in that dimension, written into the moved line, one trace serves every pass.

Run: tfretrace run --save s.json examples/wild/wrap_in_loop.py, then tfretrace fix s.json.
"""

import tensorflow as tf


def total(x):
    return tf.reduce_sum(x * x)


for length in (3, 5, 8, 13):
    total_fn = tf.function(total)
    print(length, float(total_fn(tf.range(length, dtype=tf.float32))))
