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
    import argparse  # in the main block: importing the example (tests do) reads no command line

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="added to every input (0: all ones)")
    parser.add_argument("--size", type=int, default=2, help="length of the first input (the second is one longer)")
    args = parser.parse_args()
    path = tempfile.mkdtemp()
    module = Scaler()
    n = args.size
    module.scale(tf.ones([n]) + args.seed)
    module.scale(tf.ones([n + 1]) + args.seed)
    tf.saved_model.save(module, path)  # both signatures traced again to be written
    loaded = tf.saved_model.load(path)
    for m in (n, n + 1, n):
        print(loaded.scale(tf.ones([m]) + args.seed).shape)  # one trace per signature
    for _ in range(2):
        print(tf.saved_model.load(path).scale(tf.ones([n]) + args.seed).shape)  # loaded per request
