"""A MirroredStrategy step fed (features, labels) pairs by a distributed dataset with a partial last batch.

Each element is a tuple, so the recorded leaves are `pairs[0]`, `pairs[1]` under one parameter.
"""
import contextlib
import sys

import tensorflow as tf

# Two logical CPUs stand in for two GPUs.
cpu = tf.config.list_physical_devices("CPU")[0]
with contextlib.suppress(RuntimeError):
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
features = tf.reshape(tf.range(ROWS * 3, dtype=tf.float32), [ROWS, 3]) / 10.0
labels = tf.range(ROWS, dtype=tf.int64) % 3
batched = tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)
pairs_dataset = strategy.experimental_distribute_dataset(batched)


def replica_score(x, y):
    return tf.reduce_sum(x, axis=1) * tf.cast(y, tf.float32)


@tf.function
def step(pairs):
    scores = strategy.run(replica_score, args=pairs)
    return strategy.reduce(tf.distribute.ReduceOp.SUM, scores, axis=0)


for epoch in range(2):
    total = 0.0
    for pairs in pairs_dataset:
        total += step(pairs)
    print("d_pairs", epoch, f"{float(total):.4f}")
