"""Wild case: A custom training loop over a dataset whose last batch is smaller: one more trace per epoch shape.

Run: tfretrace run --fix-plan --save s.json examples/wild/partial_batch.py, then tfretrace fix s.json.
"""

import tensorflow as tf

data = tf.data.Dataset.from_tensor_slices(tf.ones([100, 10])).batch(32)

@tf.function
def train_step(x):
    return tf.reduce_mean(x)

for epoch in range(2):
    means = [float(train_step(x)) for x in data]
    print(f"epoch {epoch}: {len(means)} steps, mean {sum(means) / len(means):.4f}")
