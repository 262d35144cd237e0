"""Held-out: TensorFlow basics guide, a quadratic tf.Module fitted by hand on shuffled batches (TF guide).

Source: tensorflow/docs, site/en/guide/basics.ipynb at commit 7c3650212740204359d4ceae481abc79345541be
(last changed in a45eae2e4cd45ed2593793d1cdb4ed6990a807e9). License: Apache-2.0.
Reduced: the notebook's code cells from "Graphs and tf.function" on, as one script: --size points
instead of 201 (the default is the guide's); a global seed set so that two runs print the same (the
guide sets none); what the notebook displays printed instead (cell values rounded, no plots);
`plot_preds` keeps its model calls and prints the predictions' mean; the SavedModel and the
`.keras` file written into a temporary folder removed at exit. Kept: `@tf.function my_func` with its
trace-time `print('Tracing.\\n')` called on int32, int32 and float32 vectors; `MyModule(tf.Module)`
with its `@tf.function multiply`, saved and reloaded; `Model(tf.Module)` with the `@tf.function
__call__`, called on all points before, during (each epoch's loss) and after training and on
`shuffle(...).batch(32)` batches without `drop_remainder` (the last one shorter) in the eager
GradientTape loop of 100 epochs with a Python float learning rate; the Keras `Sequential` of a
`Lambda` and a `Dense` fitted, saved and plotted the same way.
"""

import argparse
import atexit
import os
import shutil
import tempfile

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=201, help="points of the quadratic")
args = parser.parse_args()
tf.random.set_seed(args.seed)

workdir = tempfile.mkdtemp()
atexit.register(shutil.rmtree, workdir, ignore_errors=True)

x = tf.Variable(1.0)


def f(x):
    y = x**2 + 2*x - 5
    return y


print("f(x) =", f(x).numpy())

with tf.GradientTape() as tape:
    y = f(x)

g_x = tape.gradient(y, x)  # g(x) = dy/dx
print("g_x =", g_x.numpy())


@tf.function
def my_func(x):
    print('Tracing.\n')
    return tf.reduce_sum(x)


x = tf.constant([1, 2, 3])
print(my_func(x).numpy())

x = tf.constant([10, 9, 8])
print(my_func(x).numpy())

x = tf.constant([10.0, 9.1, 8.2], dtype=tf.float32)
print(round(float(my_func(x)), 4))


class MyModule(tf.Module):
    def __init__(self, value):
        self.weight = tf.Variable(value)

    @tf.function
    def multiply(self, x):
        return x * self.weight


mod = MyModule(3)
print(mod.multiply(tf.constant([1, 2, 3])).numpy())

save_path = os.path.join(workdir, "saved")
tf.saved_model.save(mod, save_path)

reloaded = tf.saved_model.load(save_path)
print(reloaded.multiply(tf.constant([1, 2, 3])).numpy())

x = tf.linspace(-2, 2, args.size)
x = tf.cast(x, tf.float32)


def f(x):
    y = x**2 + 2*x - 5
    return y


y = f(x) + tf.random.normal(shape=[args.size])


class Model(tf.Module):

    def __init__(self):
        # Randomly generate weight and bias terms
        rand_init = tf.random.uniform(shape=[3], minval=0., maxval=5., seed=22)
        # Initialize model parameters
        self.w_q = tf.Variable(rand_init[0])
        self.w_l = tf.Variable(rand_init[1])
        self.b = tf.Variable(rand_init[2])

    @tf.function
    def __call__(self, x):
        # Quadratic Model : quadratic_weight * x^2 + linear_weight * x + bias
        return self.w_q * (x**2) + self.w_l * x + self.b


quad_model = Model()


def plot_preds(x, y, f, model, title):
    truth = f(x)
    preds = model(x)
    print(f"{title}: prediction mean {float(tf.reduce_mean(preds)):0.3f}, "
          f"truth mean {float(tf.reduce_mean(truth)):0.3f}")


plot_preds(x, y, f, quad_model, 'Before training')


def mse_loss(y_pred, y):
    return tf.reduce_mean(tf.square(y_pred - y))


batch_size = 32
dataset = tf.data.Dataset.from_tensor_slices((x, y))
dataset = dataset.shuffle(buffer_size=x.shape[0]).batch(batch_size)

# Set training parameters
epochs = 100
learning_rate = 0.01
losses = []

for epoch in range(epochs):
    for x_batch, y_batch in dataset:
        with tf.GradientTape() as tape:
            batch_loss = mse_loss(quad_model(x_batch), y_batch)
        # Update parameters with respect to the gradient calculations
        grads = tape.gradient(batch_loss, quad_model.variables)
        for g, v in zip(grads, quad_model.variables):
            v.assign_sub(learning_rate*g)
    # Keep track of model loss per epoch
    loss = mse_loss(quad_model(x), y)
    losses.append(loss)
    if epoch % 10 == 0:
        print(f'Mean squared error for step {epoch}: {loss.numpy():0.3f}')

print("\n")
print(f"final MSE {float(losses[-1]):0.3f}")

plot_preds(x, y, f, quad_model, 'After training')

new_model = tf.keras.Sequential([
    tf.keras.layers.Lambda(lambda x: tf.stack([x, x**2], axis=1)),
    tf.keras.layers.Dense(units=1, kernel_initializer=tf.random.normal)])

new_model.compile(
    loss=tf.keras.losses.MSE,
    optimizer=tf.keras.optimizers.SGD(learning_rate=0.01))

history = new_model.fit(x, y,
                        epochs=100,
                        batch_size=32,
                        verbose=0)

new_model.save(os.path.join(workdir, 'my_new_model.keras'))

print(f"Keras loss first {history.history['loss'][0]:0.3f} last {history.history['loss'][-1]:0.3f}")

plot_preds(x, y, f, new_model, 'After Training: Keras')
