import tensorflow as tf


class Options:
    def __init__(self, gain):
        self.gain = gain


@tf.function
def amplify(x, opts):
    return x * opts.gain


for epoch in range(3):
    opts = Options(1.0)
    setattr(opts, "gain", opts.gain + epoch)  # noqa: B010 (the pattern under test)
    print("p03b", float(amplify(tf.constant(2.0), opts)))
