"""Wild case: A MirroredStrategy step fed per-replica values from a distributed dataset.

Run: tfretrace run --fix-plan --save s.json examples/wild/per_replica.py, then tfretrace fix s.json.
"""

import argparse
import contextlib

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="added to every value (0: all ones)")
parser.add_argument("--size", type=int, default=20, help="examples (global batches of 8)")
args = parser.parse_args()

# Two logical CPUs stand in for two GPUs (a no-op where the runtime has already started).
cpu = tf.config.list_physical_devices("CPU")[0]
with contextlib.suppress(RuntimeError):
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
dataset = tf.data.Dataset.from_tensor_slices(tf.ones([args.size, 3]) + args.seed).batch(8)
dist_dataset = strategy.experimental_distribute_dataset(dataset)

@tf.function
def distributed_step(batch):
    per_replica = strategy.run(lambda x: tf.reduce_sum(x), args=(batch,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

for epoch in range(2):
    total, steps = 0.0, 0
    for batch in dist_dataset:
        total += float(distributed_step(batch))
        steps += 1
    print(f"epoch {epoch}: {steps} steps, total {total}")
