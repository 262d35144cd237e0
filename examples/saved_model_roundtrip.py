"""tf.saved_model.save, then tf.saved_model.load: what traces on each side.

Saving traces every signature of a function again, to write it (expected). The restored
function traces once for each input signature it is called with, and a SavedModel loaded again
for every request traces again; loaded once and called with the shapes it was saved for, it
traces once.
"""

import tempfile

import tensorflow as tf


class Scaler(tf.Module):
    @tf.function
    def scale(self, x):
        return x * 2.0


if __name__ == "__main__":
    path = tempfile.mkdtemp()
    module = Scaler()
    module.scale(tf.ones([2]))
    module.scale(tf.ones([3]))
    tf.saved_model.save(module, path)  # both signatures traced again to be written
    loaded = tf.saved_model.load(path)
    for n in (2, 3, 2):
        print(loaded.scale(tf.ones([n])).shape)  # one trace per signature
    for _ in range(2):
        print(tf.saved_model.load(path).scale(tf.ones([2])).shape)  # loaded per request
