"""A MirroredStrategy step fed by a distributed dataset whose last batch is partial (20 rows, batches of 8)."""
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
dist_dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(features).batch(8))


def replica_norms(x):
    return tf.reduce_sum(x * x, axis=1)


@tf.function
def step(batch):
    norms = strategy.run(replica_norms, args=(batch,))
    return strategy.gather(norms, axis=0)


for epoch in range(2):
    for batch in dist_dataset:
        print(epoch, step(batch).numpy().tolist())
