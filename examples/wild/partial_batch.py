"""Wild case: A custom training loop over a dataset whose last batch is smaller: one more trace per epoch shape.

Run: tfretrace run --fix-plan --save s.json examples/wild/partial_batch.py, then tfretrace fix s.json.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every value (0: all ones)")
parser.add_argument("--size", type=int, default=100, help="examples (batches of 32: the last one partial)")
args = parser.parse_args()

data = tf.data.Dataset.from_tensor_slices(tf.ones([args.size, 10]) + args.seed).batch(32)

@tf.function
def train_step(x):
    return tf.reduce_mean(x)

for epoch in range(2):
    means = [float(train_step(x)) for x in data]
    print(f"epoch {epoch}: {len(means)} steps, mean {sum(means) / len(means):.4f}")
