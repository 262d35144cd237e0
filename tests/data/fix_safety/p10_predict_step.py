import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)


class Classifier(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(3)

    def call(self, x):
        return self.dense(x)

    def predict_step(self, data):
        return tf.argmax(self(data, training=False), axis=-1)


model = Classifier()
for n in (2, 3, 5):
    print("p10", model.predict(np.linspace(-1.0, 1.0, n * 4).reshape(n, 4), verbose=0).tolist())
