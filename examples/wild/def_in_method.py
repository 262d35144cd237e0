"""Wild case: A tf.function defined inside a method, called with a partial last batch.

Run: tfretrace run --fix-plan --save s.json examples/wild/def_in_method.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every value (0: all ones)")
parser.add_argument("--size", type=int, default=20, help="examples (batches of 8)")
args = parser.parse_args()

data = tf.data.Dataset.from_tensor_slices(tf.ones([args.size, 3]) + args.seed).batch(8)

class Evaluator:
    def __init__(self, scale):
        self.scale = scale

    def run(self):
        @tf.function
        def score(x):
            return tf.reduce_sum(x) * self.scale

        return [float(score(x)) for x in data]

for _epoch in range(5):
    print(Evaluator(2.0).run())
