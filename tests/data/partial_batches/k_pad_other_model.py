"""Two models named differently at their predict lines: a helper's parameter `model`, and a module-level `model`
that centres each batch; the first model's unrecorded calls must not pad the second one's line."""
import keras
import numpy as np

keras.utils.set_random_seed(0)


def evaluate(model, x):
    return model.predict(x, verbose=0)


rng = np.random.default_rng(0)
big = rng.random((100, 6)).astype("float32")
small = rng.random((50, 6)).astype("float32")
encoder = keras.Sequential([keras.Input((6,)), keras.layers.Dense(2)])
print("a", evaluate(encoder, big).round(4).sum())
print("b", evaluate(encoder, small).round(4).sum())
# another model, also called `model`, centring each batch (rows not computed alone)
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(2),
                          keras.layers.Lambda(lambda t: t - keras.ops.mean(t, axis=0))])
print("c", model.predict(small, verbose=0).round(4).tolist()[-2:])
