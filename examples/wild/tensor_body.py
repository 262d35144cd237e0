"""Wild case: a parameter the body uses as a Python value that a tensor serves as well.

`tf.constant(n)` refuses a symbolic tensor, so passing n as a tensor needs the body to say
`tf.convert_to_tensor(n)`; `tf.ones([n])` takes a tensor as it is. The same for a Python list of
numbers turned into a tensor: `tf.constant([values])` becomes `tf.convert_to_tensor([values])`.
Run: tfretrace run --fix-plan --save s.json examples/wild/tensor_body.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every n")
parser.add_argument("--size", type=int, default=5, help="calls of ramp")
args = parser.parse_args()


@tf.function
def ramp(n):
    count = tf.cast(tf.constant(n), tf.float32)
    return tf.reduce_sum(tf.ones([n])) / count


@tf.function
def mean_of(values):
    return tf.reduce_mean(tf.cast(tf.constant([values]), tf.float32))


for n in range(2 + args.seed, 2 + args.seed + args.size):
    print("ramp", n, float(ramp(n)))
for values in ([1, 2, 3], [4, 5], [6, 7, 8, 9]):
    print("mean", values, float(mean_of(values)))
