"""Wild case: A step called with lists of tf.Variables of two lengths: one trace per length, and that is expected.

Run: tfretrace run --fix-plan --save s.json examples/wild/variable_lists.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every initial value (0: all ones)")
parser.add_argument("--size", type=int, default=3, help="steps")
args = parser.parse_args()

small = [tf.Variable(tf.ones([3]) + args.seed) for _ in range(2)]
large = [tf.Variable(tf.ones([3]) + args.seed) for _ in range(3)]

@tf.function
def decay(variables):
    for v in variables:
        v.assign(v * 0.9)

for _step in range(args.size):
    decay(small)
    decay(large)
print([round(float(v[0]), 4) for v in small + large])
