"""Held-out: tf.Module with a tf.function __call__, checkpoint and SavedModel (TensorFlow guide).

Source: tensorflow/docs, site/en/guide/intro_to_modules.ipynb at commit
05122216a68d6df2f6d19af888a21f38ebda69f6. License: Apache-2.0.
Reduced: inputs of --size rows of seeded random numbers instead of the guide's constant
`[[2.0, 2.0, 2.0]]` rows, no TensorBoard trace export, the checkpoint and SavedModel written into a
temporary folder, `isinstance` and `!ls` cells left out, results printed rounded. Kept: `Dense` and
`MySequentialModule` as written, the `@tf.function`-decorated `__call__` called with a rank-2 and
then a rank-3 input (Python lists, as the guide passes them), the fresh model for the graph trace,
the checkpoint restore into a new module and the SavedModel save/load, with the final two calls
on the original module (one call of the loaded model is added, printed).
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=4, help="rows per input")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

rng = np.random.default_rng(args.seed)
rows = np.round(rng.uniform(-2.0, 2.0, (args.size, 3)), 2).tolist()
pairs = np.round(rng.uniform(-2.0, 2.0, (args.size, 2, 3)), 2).tolist()


def show(label, t):
    print(label, np.round(np.asarray(t, dtype=np.float64), 4).tolist())


class Dense(tf.Module):
    def __init__(self, in_features, out_features, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(
            tf.random.normal([in_features, out_features]), name="w")
        self.b = tf.Variable(tf.zeros([out_features]), name="b")

    def __call__(self, x):
        y = tf.matmul(x, self.w) + self.b
        return tf.nn.relu(y)


class MySequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)

        self.dense_1 = Dense(in_features=3, out_features=3)
        self.dense_2 = Dense(in_features=3, out_features=2)

    @tf.function
    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


# You have made a model with a graph!
my_model = MySequentialModule(name="the_model")

show("rank 2:", my_model(rows))
show("rank 3:", my_model(pairs))

# Create a new model to get a fresh trace
new_model = MySequentialModule()
show("fresh model:", new_model(tf.constant(rows, dtype=tf.float32)))

with tempfile.TemporaryDirectory() as tmp:
    chkp_path = os.path.join(tmp, "my_checkpoint")
    checkpoint = tf.train.Checkpoint(model=my_model)
    checkpoint.write(chkp_path)

    new_model = MySequentialModule()
    new_checkpoint = tf.train.Checkpoint(model=new_model)
    new_checkpoint.restore(chkp_path)

    # Should be the same result as above
    show("restored:", new_model(tf.constant(rows, dtype=tf.float32)))

    tf.saved_model.save(my_model, os.path.join(tmp, "the_saved_model"))
    new_model = tf.saved_model.load(os.path.join(tmp, "the_saved_model"))

show("after save, rank 2:", my_model(rows))
show("after save, rank 3:", my_model(pairs))
show("loaded, rank 2:", new_model(rows))
