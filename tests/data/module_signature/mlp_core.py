"""The tensorflow/docs Core APIs MLP, reduced: a tf.Module whose layers make their variables on the first call.

Trained on batches of 128 (the last one partial), validated on batches of 128 (one partial), then
saved through an export wrapper whose input_signature calls the model with an open batch, and
reloaded. It prints the rounded losses, the reloaded model's predictions and TensorFlow's own
trace count of ``MLP.__call__``.
"""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

tf.random.set_seed(22)
FEATURES = 20


def xavier_init(shape):
    in_dim, out_dim = shape
    limit = tf.sqrt(6.0 / (in_dim + out_dim))
    return tf.random.uniform(shape=shape, minval=-limit, maxval=limit, seed=22)


class DenseLayer(tf.Module):
    def __init__(self, out_dim, weight_init=xavier_init, activation=tf.identity):
        self.weight_init = weight_init
        self.activation = activation
        self.out_dim = out_dim
        self.built = False

    def __call__(self, x):
        if not self.built:
            # The input size is known only at the first call: the variables are made there.
            self.in_dim = x.shape[1]
            self.w = tf.Variable(self.weight_init(shape=(self.in_dim, self.out_dim)))
            self.b = tf.Variable(tf.zeros(shape=(self.out_dim,)))
            self.built = True
        z = tf.add(tf.matmul(x, self.w), self.b)
        return self.activation(z)


class MLP(tf.Module):
    def __init__(self, layers):
        self.layers = layers

    @tf.function
    def __call__(self, x, preds=False):
        for layer in self.layers:
            x = layer(x)
        return x


def loss_fn(y_pred, y):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=y_pred))


class ExportModule(tf.Module):
    def __init__(self, model):
        self.model = model

    @tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])
    def __call__(self, x):
        x = tf.reshape(x, shape=[-1, FEATURES])
        return tf.argmax(tf.nn.softmax(self.model(x)), axis=1)


rng = np.random.default_rng(0)
x_train = rng.normal(size=(300, FEATURES)).astype("float32")
y_train = (x_train[:, 0] > 0).astype("int64") + 2 * (x_train[:, 1] > 0).astype("int64")
x_val = rng.normal(size=(150, FEATURES)).astype("float32")
y_val = (x_val[:, 0] > 0).astype("int64") + 2 * (x_val[:, 1] > 0).astype("int64")
train_data = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(128)
val_data = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(128)

model = MLP([DenseLayer(32, activation=tf.nn.relu), DenseLayer(4)])
learning_rate = 0.1
for epoch in range(3):
    for x_batch, y_batch in train_data:
        with tf.GradientTape() as tape:
            batch_loss = loss_fn(model(x_batch), y_batch)
        grads = tape.gradient(batch_loss, model.variables)
        for g, v in zip(grads, model.variables):
            v.assign_sub(learning_rate * g)
    val_loss = np.mean([loss_fn(model(x_batch), y_batch).numpy() for x_batch, y_batch in val_data])
    print(f"mlp epoch {epoch} loss {float(batch_loss):.3f} val {float(val_loss):.3f}")

save_path = os.path.join(tempfile.mkdtemp(), "mlp")
tf.saved_model.save(ExportModule(model), save_path)
loaded = tf.saved_model.load(save_path)
print("mlp predictions", loaded(tf.constant(x_val[:12])).numpy().tolist())
print("mlp traces", model.__call__.experimental_get_tracing_count(), file=sys.stderr)
