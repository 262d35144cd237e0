"""Held-out: token classification trained one document at a time, each of its own length (TF issue).

Source: tensorflow/tensorflow issue #38002, "Is retracing inevitable when working with
variously-sized inputs?" (cranedroesch, 2020-03-28): its model and its `train` function as posted.
License: none stated (code posted in a public issue); reduced and rewritten here.
Reduced: the issue gives the model and the step only; the rest is the least the post describes:
--size synthetic documents of 20 to 400 tokens (the post's 100 to 8000, a twentieth) with 16 input
features each and two output variables of three classes whose labels follow the features, one
document per batch, Adam and categorical cross-entropy for the unnamed optimizer and `loss_object`,
two passes over the documents, and each pass's mean loss over all documents printed (computed
eagerly). Kept: `Input(shape=(None, input_dims))`, the shared `Conv1D` and one softmax `Conv1D` per
output variable, and the `@tf.function train(x, y)` whose gradient and update sit inside the
tape's block, called with each document in turn.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Conv1D, Input
from tensorflow.keras.models import Model

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=24, help="documents")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

input_dims = 16
out_varnames = ["entity", "sentiment"]


def synthetic_documents(n, rng):
    """Documents of random length; each output's class is the argmax of three of the features."""
    docs = []
    for _ in range(n):
        length = int(rng.integers(20, 401))
        x = rng.normal(size=(1, length, input_dims)).astype("float32")
        y = [np.eye(3, dtype="float32")[np.argmax(x[..., 3 * k:3 * k + 3], axis=-1)] for k in range(len(out_varnames))]
        docs.append((x, y))
    return docs


documents = synthetic_documents(args.size, np.random.default_rng(args.seed))

inp = Input(shape=(None, input_dims))
lay = Conv1D(filters=100, kernel_size=5, padding="same", activation="relu")(inp)
outlayers = [Conv1D(filters=3, kernel_size=5, activation="softmax", padding="same", name=i)(lay) for i in out_varnames]
model = Model(inp, outlayers)

loss_object = tf.keras.losses.CategoricalCrossentropy()
optimizer = tf.keras.optimizers.Adam()


@tf.function
def train(x, y):
    with tf.GradientTape() as g:
        pred = model(x)
        loss = loss_object(y, pred)
        gradients = g.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))


for epoch in range(2):
    for x, y in documents:
        train(x, y)
    mean_loss = np.mean([float(loss_object(y, model(x))) for x, y in documents])
    print("epoch %d: mean loss %.4f over %d documents" % (epoch + 1, mean_loss, len(documents)))
