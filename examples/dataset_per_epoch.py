"""A tf.data pipeline rebuilt every epoch traces its map function every epoch.

Dataset.map traces its function when the pipeline is built. Building the dataset inside the
epoch loop (a common pattern when shuffling "by hand") traces parse again every epoch; the
dataset built once and iterated every epoch traces it once.
"""

import tensorflow as tf


def parse(x):
    return tf.cast(x, tf.float32) / 10.0


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="the first value")
    parser.add_argument("--size", type=int, default=16, help="values (batches of 4)")
    args = parser.parse_args()
    values = tf.range(args.seed, args.seed + args.size)
    for epoch in range(3):
        ds = tf.data.Dataset.from_tensor_slices(values).map(parse).batch(4)  # rebuilt per epoch
        print(epoch, sum(float(tf.reduce_sum(b)) for b in ds))
    once = tf.data.Dataset.from_tensor_slices(values).map(parse).batch(4)  # built once
    for epoch in range(3):
        print(epoch, sum(float(tf.reduce_sum(b)) for b in once))
