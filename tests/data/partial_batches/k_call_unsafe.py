"""Three models predicted on a few rows whose call is not their predict: an own predict_step, two outputs, a counter."""
import keras
import numpy as np


class Classifier(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(3)

    def call(self, x):
        return self.dense(x)

    def predict_step(self, data):
        return keras.ops.argmax(self(data, training=False), axis=-1)


class Counted(keras.layers.Layer):
    """Counts the rows it was called on in a variable: every call updates it, predict's trace only adds the op."""

    def build(self, shape):
        self.seen = self.add_weight(shape=(), initializer="zeros", trainable=False, name="seen")

    def call(self, x):
        self.seen.assign_add(keras.ops.cast(keras.ops.shape(x)[0], "float32"))
        return x * 2.0


keras.utils.set_random_seed(0)
classifier = Classifier()
inputs = keras.Input((None, 4))
two = keras.Model(inputs, [keras.layers.Dense(2)(inputs), keras.layers.Dense(1)(inputs)])
counted = keras.Sequential([keras.Input((None, 4)), Counted(), keras.layers.Dense(2)])
for n, length in [(3, 5), (2, 7)]:
    x = np.linspace(-1.0, 1.0, n * length * 4).reshape(n, length, 4).astype("float32")
    print("k_call_unsafe classifier", classifier.predict(x, verbose=0).tolist())
    first, second = two.predict(x, verbose=0)
    print("k_call_unsafe two", first.shape, second.shape)
    print("k_call_unsafe counted", counted.predict(x, verbose=0).shape)
print("k_call_unsafe seen", float(counted.layers[0].seen.numpy()))
