"""tf.Variable arguments: trainable flag and aliasing are part of the trace key.

A helper that clips weights in place is called with every variable of a model. Variables of
the same shape and dtype share a trace, but a non-trainable one (a moving statistic) is a new
key, and so is passing the same variable in two argument positions. Fix: pass variables in a
consistent arrangement, or capture them instead of passing them.
"""

import tensorflow as tf


@tf.function
def clip_into(target, source):
    target.assign(tf.clip_by_value(source, -1.0, 1.0))


if __name__ == "__main__":
    kernel = tf.Variable(tf.fill([3], 2.0))
    shadow = tf.Variable(tf.zeros([3]))
    moving_mean = tf.Variable(tf.fill([3], -3.0), trainable=False)

    clip_into(shadow, kernel)
    clip_into(kernel, shadow)  # same arrangement: no retrace
    clip_into(shadow, moving_mean)  # a non-trainable source
    clip_into(kernel, kernel)  # clip in place: both arguments are one variable
    print(kernel.numpy(), shadow.numpy())
    print("traces:", clip_into.experimental_get_tracing_count())
