"""Wild case: A step called with lists of tf.Variables of two lengths: one trace per length, and that is expected.

Run: tfretrace run --fix-plan --save s.json examples/wild/variable_lists.py, then tfretrace fix s.json.
"""

import tensorflow as tf

small = [tf.Variable(tf.ones([3])) for _ in range(2)]
large = [tf.Variable(tf.ones([3])) for _ in range(3)]

@tf.function
def decay(variables):
    for v in variables:
        v.assign(v * 0.9)

for _step in range(3):
    decay(small)
    decay(large)
print([round(float(v[0]), 4) for v in small + large])
