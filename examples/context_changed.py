"""The same tf.function under two devices: what TF 2.21 really does.

Calling a tf.function eagerly under `with tf.device("/cpu:0")` and then `"/cpu:1"` does NOT
retrace: outside a distribution strategy the device is not part of the trace key (the op
placement is decided when the graph runs). Under a MirroredStrategy over two devices, though,
a tf.function called from replica code is traced once per replica device: the device IS part
of the key there. That second trace is expected, once per device.
"""

import tensorflow as tf

# Split the one physical CPU into two logical devices (must happen before TensorFlow starts).
cpu = tf.config.list_physical_devices("CPU")[0]
if tf.config.get_logical_device_configuration(cpu) is None:
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


@tf.function
def scale(x):
    return x * 2.0


@tf.function
def replica_loss(x):
    return tf.reduce_sum(x * x)


strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@tf.function
def distributed_step(x):
    per_replica = strategy.run(lambda t: replica_loss(t), (x,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every element (0: all ones)")
    parser.add_argument("--size", type=int, default=4, help="elements of x")
    args = parser.parse_args()
    x = tf.fill([args.size], 1.0 + args.seed)
    with tf.device("/cpu:0"):
        scale(x)
    with tf.device("/cpu:1"):
        scale(x)
    print("eager calls under two tf.device scopes, traces:", scale.experimental_get_tracing_count())

    for _ in range(2):
        print("loss", float(distributed_step(x)))
    print("replica function traces (one per device):", replica_loss.experimental_get_tracing_count())
