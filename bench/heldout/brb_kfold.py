"""Held-out: belief-rule-base tf.Modules trained per cross-validation fold, a train step made per fold.

Source: Eriri/brb, code/bid.py (`BModel`, `AModel`, `training`, `main`) at commit
3403a256d15757630d226fcf71ef791ed96b0221 (2020-09-20) with code/util.py (`kfold`,
`generate_variable`) and code/dataset.py (`dataset_numeric_classification`); reported by DLPerf
as issue #2 of that repository ("`training` is repeatedly called in a for loop, but there is a
tf.function decorated function `dist_train_step` defined and called in `training`").
License: none stated (no license file); reduced and rewritten here, not copied.
Reduced: --size synthetic rows of seven attributes in eight imbalanced classes (each class a noisy
centre) as float32 instead of OpenML's `ecoli` table (the modules' variables are float32), a
numpy shuffled k-fold instead of scikit-learn's `KFold` (not installed here), 2 experiments of
2 folds instead of 10 of 10, 4 epochs instead of `ep=1024`, the summary writer in a temporary
folder, and the running test accuracy printed after each fold (and the last fold's last loss).
Kept: `BModel` and `AModel` as `tf.Module`s with their `__call__` as written, `training` with
its `MirroredStrategy`, `experimental_distribute_dataset` over `shuffle(1024).batch(bs).repeat(ep)`
(so a partial batch closes every epoch), the plain `train_step` run by `s.run` inside the
`@tf.function dist_train_step` defined anew in each `training` call, the Python `step` given to
`tf.summary.scalar` with `loss.numpy()`, and `main` calling `training` once per fold of each
experiment and scoring the test rows eagerly with `tf.metrics.Accuracy`.
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=336, help="rows (ecoli has 336)")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

os.environ['TF_CPP_MIN_LOG_LEVEL'] = '1'

tf.keras.backend.set_floatx('float64')
gpus = tf.config.experimental.list_physical_devices('GPU')
[tf.config.experimental.set_memory_growth(gpu, True) for gpu in gpus]
logdir = tempfile.TemporaryDirectory()
sw = tf.summary.create_file_writer(os.path.join(logdir.name, 'logs'))


def generate_variable(shape, dtype=tf.float32, trainable=True, initial_value=None):
    if initial_value is None:
        return tf.Variable(tf.random.normal(shape=shape, dtype=dtype), trainable=trainable, dtype=dtype)
    return tf.Variable(initial_value=initial_value, shape=shape, trainable=trainable, dtype=dtype)


def kfold(x, y, n_splits, dtype, shuffle=True, random_state=None):
    """Shuffled k-fold as scikit-learn's KFold splits it: the first n % k folds one row larger."""
    idx = np.random.default_rng(random_state).permutation(y.shape[0]) if shuffle else np.arange(y.shape[0])
    sizes = np.full(n_splits, y.shape[0] // n_splits)
    sizes[: y.shape[0] % n_splits] += 1
    folds, start = [], 0
    for size in sizes:
        test_mask = idx[start:start + size]
        train_mask = np.setdiff1d(idx, test_mask)
        folds.append((x[train_mask], y[train_mask], x[test_mask], y[test_mask]))
        start += size
    return folds


def dataset_numeric_classification(n, rng):
    """Seven attributes in [0, 1]; eight classes of very different sizes, each around its own centre."""
    res_dim, att_dim = 8, 7
    centres = rng.uniform(0.1, 0.9, size=(res_dim, att_dim))
    target = rng.choice(res_dim, size=n, p=[0.42, 0.23, 0.15, 0.1, 0.06, 0.02, 0.01, 0.01]).astype(np.int32)
    data = np.clip(centres[target] + rng.normal(0.0, 0.12, size=(n, att_dim)), 0.0, 1.0).astype(np.float32)
    return data, target, att_dim, res_dim


class BModel(tf.Module):
    def __init__(self, rule_num, att_dim, res_dim):
        super().__init__()
        self.a = generate_variable((rule_num, att_dim,))
        self.d = generate_variable((att_dim,))
        self.b = generate_variable((rule_num, res_dim,))
        self.r = generate_variable((rule_num,))

    def __call__(self, x):
        w = tf.math.exp(tf.math.negative(
            tf.math.square(self.a - tf.expand_dims(x, -2)) * tf.math.exp(self.d)))
        aw = tf.reduce_sum(tf.where(tf.math.is_nan(w), tf.zeros_like(w), w), -1) * tf.math.exp(self.r)
        bc = tf.reduce_prod(
            tf.expand_dims(aw / (tf.expand_dims(tf.reduce_sum(aw, -1), -1) - aw), -1) * tf.nn.softmax(self.b) + 1.0,
            -2) - 1.0
        pc = bc / tf.expand_dims(tf.reduce_sum(bc, -1), -1)
        return tf.where(tf.math.is_nan(pc), tf.zeros_like(pc), pc)


class AModel(tf.Module):
    def __init__(self, rule_num, base_num, base_rule_num, att_dim, mid_dim, res_dim):
        super().__init__()
        self.bms = [BModel(base_rule_num, att_dim, mid_dim) for _ in range(base_num)]
        self.a = generate_variable((rule_num, base_num, mid_dim,))
        self.d = generate_variable((base_num,))
        self.b = generate_variable((rule_num, res_dim,))
        self.r = generate_variable((rule_num,))

    def __call__(self, x):
        mid_out = tf.concat([tf.expand_dims(bm(x), -2) for bm in self.bms], -2)
        w = tf.reduce_sum(tf.math.square(self.a - tf.expand_dims(mid_out, -3)), -1) * tf.math.exp(self.d)
        aw = tf.math.exp(-tf.reduce_sum(w, -1)) * tf.math.exp(self.r)
        bc = tf.reduce_prod(
            tf.expand_dims(aw / (tf.expand_dims(tf.reduce_sum(aw, -1), -1) - aw), -1) * tf.nn.softmax(self.b) + 1.0,
            -2) - 1.0
        pc = bc / tf.expand_dims(tf.reduce_sum(bc, -1), -1)
        return tf.where(tf.math.is_nan(pc), tf.zeros_like(pc), pc)


last_loss = []


def training(rule_num, base_num, base_rule_num, att_dim, mid_dim, res_dim, x, y, bs=64, ep=4):
    s = tf.distribute.MirroredStrategy()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(bs).repeat(ep)
    ds = s.experimental_distribute_dataset(ds)
    with s.scope():
        model = AModel(rule_num, base_num, base_rule_num, att_dim, mid_dim, res_dim)
        opt, tv = tf.optimizers.Adam(), model.trainable_variables

        def calculate_loss(y_true, y_pred):
            return tf.nn.compute_average_loss(
                tf.keras.losses.categorical_crossentropy(
                    y_true, y_pred),
                global_batch_size=bs)

        def train_step(x, y):
            with tf.GradientTape(persistent=True) as gt:
                loss = calculate_loss(y, model(x))
            opt.apply_gradients(zip(gt.gradient(loss, tv), tv))
            return loss

        @tf.function
        def dist_train_step(x, y):
            per_loss = s.run(train_step, args=(x, y,))
            return s.reduce(tf.distribute.ReduceOp.SUM, per_loss, None)

        for step, (x, y) in enumerate(ds):
            loss = dist_train_step(x, y)
            with sw.as_default():
                tf.summary.scalar("dist_loss", loss.numpy(), step)
    last_loss[:] = [float(loss.numpy())]
    return model


def main():
    experiment_num = 2
    data, target, att_dim, res_dim = dataset_numeric_classification(args.size, np.random.default_rng(args.seed))
    acc = tf.metrics.Accuracy()
    cnt = 0
    for en in range(experiment_num):
        for train_data, train_target, test_data, test_target in kfold(data, target, 2, 'numeric', random_state=en):
            O, D = 0.5 * (np.min(train_data, 0) + np.max(train_data, 0)), 0.5 * np.ptp(train_data, 0)  # noqa: E741
            D = np.where(D == 0.0, 0.5, D)
            model = training(32, 4, 16, att_dim, 4, res_dim, (train_data - O) / D, np.eye(res_dim)[train_target])
            test_pred = tf.math.argmax(model((test_data - O) / D), -1)
            acc.update_state(test_target, test_pred)
            with sw.as_default():
                tf.summary.scalar('ecoli_16*4_32_64', acc.result().numpy(), cnt)
                cnt += 1
            print("experiment %d fold %d: running accuracy %.4f, last loss %.4f" % (
                en, cnt, float(acc.result().numpy()), last_loss[0]))


if __name__ == "__main__":
    main()
    logdir.cleanup()
