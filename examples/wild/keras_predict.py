"""Wild case: Keras predict on inputs whose batch size and time dimension both vary.

Run: tfretrace run --fix-plan --save s.json examples/wild/keras_predict.py, then tfretrace fix s.json.
"""

import keras
import numpy as np

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((None, 4)), keras.layers.Dense(2)])
for n, length in [(32, 5), (16, 9), (32, 5)]:
    x = np.ones((n, length, 4), dtype="float32")
    y = model.predict(x, verbose=0)
    print(y.shape, round(float(y.sum()), 3))
