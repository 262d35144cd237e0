"""Wild case: A recurrent step called with state=None first, then with the returned state tensor.

Run: tfretrace run --fix-plan --save s.json examples/wild/none_state.py, then tfretrace fix s.json.
"""

import tensorflow as tf


@tf.function
def cell(x, state):
    if state is None:
        state = tf.zeros([2, 4])
    return tf.tanh(x + state)

state = None
for _step in range(4):
    state = cell(tf.ones([2, 4]), state)
print(state.numpy().round(4).tolist())
