import tensorflow as tf


class Params:
    def __init__(self, gain):
        self.gain = gain


@tf.function
def apply_gain(x, params):
    return x * params.gain


for i in range(3):
    params = Params(2.0)
    print(float(apply_gain(tf.constant(float(i)), params)))
