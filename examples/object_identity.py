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
    images = tf.ones([2, 4])
    for _ in range(4):
        config = AugmentConfig(scale=2.0, shift=0.5)
        augment(images, config)
    print("traces:", augment.experimental_get_tracing_count())
