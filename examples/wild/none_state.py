"""Wild case: A recurrent step called with state=None first, then with the returned state tensor.

Run: tfretrace run --fix-plan --save s.json examples/wild/none_state.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every input value (0: all ones)")
parser.add_argument("--size", type=int, default=4, help="steps")
args = parser.parse_args()


@tf.function
def cell(x, state):
    if state is None:
        state = tf.zeros([2, 4])
    return tf.tanh(x + state)

state = None
for _step in range(args.size):
    state = cell(tf.ones([2, 4]) + args.seed, state)
print(state.numpy().round(4).tolist())
