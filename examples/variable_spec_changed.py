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
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="moves kernel and moving_mean apart")
    parser.add_argument("--size", type=int, default=3, help="elements per variable")
    args = parser.parse_args()
    kernel = tf.Variable(tf.fill([args.size], 2.0 + args.seed))
    shadow = tf.Variable(tf.zeros([args.size]))
    moving_mean = tf.Variable(tf.fill([args.size], -3.0 - args.seed), trainable=False)

    clip_into(shadow, kernel)
    clip_into(kernel, shadow)  # same arrangement: no retrace
    clip_into(shadow, moving_mean)  # a non-trainable source
    clip_into(kernel, kernel)  # clip in place: both arguments are one variable
    print(kernel.numpy(), shadow.numpy())
    print("traces:", clip_into.experimental_get_tracing_count())
