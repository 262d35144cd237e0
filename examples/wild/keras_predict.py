"""Wild case: Keras predict on inputs whose batch size and time dimension both vary.

Run: tfretrace run --fix-plan --save s.json examples/wild/keras_predict.py, then tfretrace fix s.json.
"""

import argparse

import keras
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0, help="the model's initial weights")
parser.add_argument("--size", type=int, default=32, help="rows of the largest request")
args = parser.parse_args()

keras.utils.set_random_seed(args.seed)
model = keras.Sequential([keras.Input((None, 4)), keras.layers.Dense(2)])
for n, length in [(args.size, 5), (args.size // 2, 9), (args.size, 5)]:
    x = np.ones((n, length, 4), dtype="float32")
    y = model.predict(x, verbose=0)
    print(y.shape, round(float(y.sum()), 3))
