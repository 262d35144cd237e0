"""A config object re-created for every call.

Plain Python objects passed to a tf.function are keyed by identity (a weak reference): an
equal-looking new instance is a new key and traces again. Fix: build the config once and
reuse it, pass its numbers as tensors, or give the class a __tf_tracing_type__.
"""

import tensorflow as tf


class AugmentConfig:
    def __init__(self, scale, shift):
        self.scale = scale
        self.shift = shift


@tf.function
def augment(images, config):
    return images * config.scale + config.shift


if __name__ == "__main__":
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every pixel (0: all ones)")
    parser.add_argument("--size", type=int, default=2, help="images")
    args = parser.parse_args()
    images = tf.ones([args.size, 4]) + args.seed
    for _ in range(4):
        config = AugmentConfig(scale=2.0, shift=0.5)
        augment(images, config)
    print("traces:", augment.experimental_get_tracing_count())
