"""Wild case: a Python int passed positionally to a tf.function made with the call form.

`tf_scaled_sum = tf.function(scaled_sum)`, then `tf_scaled_sum(x, k)` in a loop: each new k is a
new trace. The call-site edit is one token: `tf.constant(k, dtype=tf.int32)`.
Run: tfretrace run --fix-plan --save s.json examples/wild/call_form.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="the first k")
parser.add_argument("--size", type=int, default=6, help="calls")
args = parser.parse_args()


def scaled_sum(x, k):
    return tf.reduce_sum(x) * tf.cast(k, tf.float32)


tf_scaled_sum = tf.function(scaled_sum)

x = tf.ones([4])
total = 0.0
for k in range(args.seed, args.seed + args.size):
    total += float(tf_scaled_sum(x, k))
print("total", total)
