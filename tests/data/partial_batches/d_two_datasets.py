"""A MirroredStrategy step fed by two distributed datasets whose elements differ (3 features, then 5).

The first call comes from `train_dataset`; its element_spec as the input_signature would refuse
every element of `wide_dataset`, which the program as written traces for.
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


def pairs(width):
    features = tf.reshape(tf.range(ROWS * width, dtype=tf.float32), [ROWS, width]) / 10.0
    labels = tf.range(ROWS, dtype=tf.int64) % 3
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)


train_dataset = strategy.experimental_distribute_dataset(pairs(3))
wide_dataset = strategy.experimental_distribute_dataset(pairs(5))


def replica_score(x, y):
    return tf.reduce_sum(x, axis=1) * tf.cast(y, tf.float32)


@tf.function
def step(batch):
    scores = strategy.run(replica_score, args=batch)
    return strategy.reduce(tf.distribute.ReduceOp.SUM, scores, axis=0)


for epoch in range(2):
    total = 0.0
    for batch in train_dataset:
        total += step(batch)
    for batch in wide_dataset:
        total += step(batch)
    print("d_two_datasets", epoch, f"{float(total):.4f}")
