"""Held-out: a peak model whose predict step is a tf.function made anew in each call (GitHub project).

Source: YosefLab/epitome, epitome/models.py (`VariationalPeakModel`: `train`, `test`, `eval_vector`,
`run_predictions`, `score_matrix`; `VLP.create_model`) and epitome/generators.py
(`generator_to_tf_dataset`, `load_data`) at commit 369db70cb83ac0b3efdf12c5e120a01144180007
(2021-01-25, the last before the fix), the code its issue #43 "Extra TF function retracing"
(RK900, 2021-01-18) reports: "9 out of the last 9 calls to
<function VariationalPeakModel.run_predictions.<locals>.predict_step> triggered tf.function
retracing"; upstream moved the tf.function out of `run_predictions` in
2e22426c41b965f354f6e19863a132947aeb7652 (#48). License: Apache-2.0 (setup.py).
Reduced: a synthetic binary genome (--size regions, three reference cell types and three query cell
types, DNase plus three ChIP-seq targets) instead of the downloaded ENCODE data; features are, per
reference cell type, the DNase agreement with the query over the radii plus the reference's own
targets (one reference lacks a target, so the channels are uneven, as upstream); a small
`DenseFlipout` stand-in (a mean kernel plus a softplus-scaled Gaussian perturbation drawn at each
call, sign-flipped per row as Flipout does, its KL term in `model.losses`) instead of
tensorflow_probability's, which is not installed here; no pickled checkpoint, pyranges, metrics
(`calculate_metrics=False`) or logging, and `score_matrix` scores a matrix of accessibility vectors
over all regions directly. Kept: `train` with its nested
`@tf.function train_step` and `@tf.function loopiter` over the repeated dataset; the datasets of
`generator_to_tf_dataset` (`from_generator`, batch, shuffle, repeat, prefetch); `run_predictions`
with its `@tf.function predict_step` defined inside it, closing over `samples`, tiling each batch
`samples` times and taking `int(num_samples / batch_size) + 1` batches (so a partial last batch);
`test` on the validation and test iterators and `score_matrix` calling `eval_vector` once per
sample with `samples = 1`, each call building its own dataset and its own `predict_step`.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=300, help="genomic regions")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

TRAIN, VALID, TEST, RUNTIME = "train", "valid", "test", "runtime"
ASSAYS = ["DNase", "CTCF", "RAD21", "YY1"]
REFERENCE = {"K562": ASSAYS, "HepG2": ASSAYS, "GM12878": ["DNase", "CTCF", "RAD21"]}
QUERIES = ["A549", "HeLa-S3", "IMR-90"]


def synthetic_genome(n, rng):
    """Per cell type and assay, n binary peaks; targets bind mostly where the DNase is open."""
    base = rng.random(n) < 0.35
    genome = {}
    for cell in list(REFERENCE) + QUERIES:
        dnase = np.where(rng.random(n) < 0.8, base, rng.random(n) < 0.35)
        genome[(cell, "DNase")] = dnase.astype("float32")
        for k, assay in enumerate(ASSAYS[1:]):
            bound = dnase & (rng.random(n) < 0.4 + 0.15 * k)
            genome[(cell, assay)] = bound.astype("float32")
    return genome


def agreement(query_dnase, ref_dnase, i, radii):
    """Fraction of positions open in both cell types, in a window of each radius around region i."""
    out = []
    for r in radii:
        lo, hi = max(0, i - r), min(len(query_dnase), i + r + 1)
        out.append(float(np.mean(query_dnase[lo:hi] * ref_dnase[lo:hi])))
    return out


def load_data(genome, label_cell_types, radii, mode, similarity_matrix=None, indices=None):
    """A generator of (one feature vector per reference cell type..., labels, weights) per region."""
    n = len(genome[("K562", "DNase")])
    if indices is None:
        indices = np.arange(n)

    def g():
        for i in indices:
            cells = label_cell_types if mode != RUNTIME else ["runtime"]
            for cell in cells:
                if mode == RUNTIME:
                    query_dnase = similarity_matrix
                    labels = np.zeros(len(ASSAYS) - 1, dtype="float32")
                else:
                    query_dnase = genome[(cell, "DNase")]
                    labels = np.array([genome[(cell, a)][i] for a in ASSAYS[1:]], dtype="float32")
                features = []
                for ref, assays in REFERENCE.items():
                    sims = agreement(query_dnase, genome[(ref, "DNase")], i, radii)
                    own = [genome[(ref, a)][i] for a in assays[1:]]
                    features.append(np.array(sims + own, dtype="float32"))
                weights = np.ones(len(ASSAYS) - 1, dtype="float32")
                yield (*features, labels, weights)

    return g


def generator_to_tf_dataset(g, batch_size, shuffle_size, prefetch_size):
    for f in g():
        break
    shapes = [i.shape for i in f]
    dataset = tf.data.Dataset.from_generator(
        g, output_types=(tf.float32,) * len(f), output_shapes=tuple(shapes))
    dataset = dataset.batch(batch_size)
    dataset = dataset.shuffle(shuffle_size)
    dataset = dataset.repeat()
    dataset = dataset.prefetch(prefetch_size)
    return [i.shape[0] for i in f[:-2]], f[-2].shape, dataset


class DenseFlipout(tf.keras.layers.Layer):
    """Stand-in for tfp.layers.DenseFlipout: a weight draw per call, the KL term added as a loss."""

    def __init__(self, units, kl_scale, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.units, self.kl_scale = units, kl_scale
        self.activation = tf.keras.activations.get(activation)

    def build(self, input_shape):
        d = int(input_shape[-1])
        self.loc = self.add_weight(shape=(d, self.units), initializer="glorot_uniform", name="loc")
        self.rho = self.add_weight(shape=(d, self.units), initializer=tf.keras.initializers.Constant(-3.0),
                                   name="rho")
        self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias")

    def call(self, x):
        # Flipout: one kernel perturbation per call, decorrelated per row by random signs.
        scale = tf.nn.softplus(self.rho)
        delta = scale * tf.random.normal(tf.shape(self.loc))
        sign_in = tf.sign(tf.random.uniform(tf.shape(x)) - 0.5)
        sign_out = tf.sign(tf.random.uniform([tf.shape(x)[0], self.units]) - 0.5)
        out = tf.matmul(x, self.loc) + tf.matmul(x * sign_in, delta) * sign_out
        kl = tf.reduce_sum(0.5 * (scale ** 2 + self.loc ** 2 - 1.0) - tf.math.log(scale))
        self.add_loss(kl * self.kl_scale)
        return self.activation(out + self.bias)


class VariationalPeakModel:

    def __init__(self, genome, test_celltypes, batch_size=64, shuffle_size=10, prefetch_size=10,
                 lr=1e-3, radii=(1, 3, 10, 30)):
        n = len(genome[("K562", "DNase")])
        self.genome = genome
        self.test_celltypes = test_celltypes
        self.eval_cell_types = [c for c in QUERIES if c not in test_celltypes]
        train_idx, valid_idx = np.arange(0, int(n * 0.7)), np.arange(int(n * 0.7), n)

        input_shapes, output_shape, self.train_iter = generator_to_tf_dataset(
            load_data(genome, self.eval_cell_types, radii, TRAIN, indices=train_idx),
            batch_size, shuffle_size, prefetch_size)
        _, _, self.valid_iter = generator_to_tf_dataset(
            load_data(genome, self.eval_cell_types, radii, VALID, indices=valid_idx),
            batch_size, 1, prefetch_size)
        if len(self.test_celltypes) > 0:
            _, _, self.test_iter = generator_to_tf_dataset(
                load_data(genome, self.test_celltypes, radii, TEST, indices=valid_idx),
                batch_size, 1, prefetch_size)

        self.lr = lr
        self.batch_size = batch_size
        self.prefetch_size = prefetch_size
        self.optimizer = tf.keras.optimizers.Adam(learning_rate=self.lr)
        self.num_outputs = output_shape[0]
        self.num_inputs = input_shapes
        self.radii = radii
        self.model = self.create_model()

    def loss_fn(self, y_true, y_pred, weights):
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred) * weights
        return tf.math.reduce_sum(loss, axis=0)

    def train(self, num_steps):

        @tf.function
        def train_step(f):
            features = f[:-2]
            labels = f[-2]
            weights = f[-1]

            with tf.GradientTape() as tape:

                logits = self.model(features, training=True)
                kl_loss = tf.reduce_sum(self.model.losses)
                neg_log_likelihood = self.loss_fn(labels, logits, weights)
                elbo_loss = neg_log_likelihood + kl_loss

            gradients = tape.gradient(elbo_loss, self.model.trainable_variables)
            self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))

            return elbo_loss, neg_log_likelihood, kl_loss

        @tf.function
        def loopiter():
            for step, f in enumerate(self.train_iter):
                train_step(f)

                if step > num_steps:
                    break

        loopiter()

    def test(self, num_samples, mode=VALID, calculate_metrics=False):
        if (mode == VALID):
            handle = self.valid_iter
        elif (mode == TEST and len(self.test_celltypes) > 0):
            handle = self.test_iter
        else:
            raise Exception("No data exists for %s." % (mode))

        return self.run_predictions(num_samples, handle, calculate_metrics)

    def eval_vector(self, matrix, indices, samples=50):
        input_shapes, output_shape, ds = generator_to_tf_dataset(
            load_data(self.genome, self.test_celltypes, self.radii, RUNTIME,
                      similarity_matrix=matrix, indices=indices),
            self.batch_size, 1, self.prefetch_size)

        num_samples = len(indices)

        results = self.run_predictions(num_samples, ds, calculate_metrics=False, samples=samples)

        return results['preds_mean'], results['preds_std']

    def run_predictions(self, num_samples, iter_, calculate_metrics=True, samples=50):
        batches = int(num_samples / self.batch_size) + 1

        # empty arrays for concatenation
        truth = []
        preds_mean = []
        preds_std = []
        sample_weight = []

        @tf.function
        def predict_step(inputs_b):

            # sample n times by tiling batch by rows, running
            # predictions for each row
            inputs_tiled = [tf.tile(i, (samples, 1)) for i in inputs_b]
            tmp = self.model(inputs_tiled)
            y_pred = tf.sigmoid(tmp)
            # split up batches into a third dimension and stack them in third dimension
            preds = tf.stack(tf.split(y_pred, samples, axis=0), axis=0)
            return tf.math.reduce_mean(preds, axis=0), tf.math.reduce_std(preds, axis=0)

        for f in iter_.take(batches):
            inputs_b = f[:-2]
            truth_b = f[-2]
            weights_b = f[-1]
            preds_mean_b, preds_std_b = predict_step(inputs_b)

            preds_mean.append(preds_mean_b)
            preds_std.append(preds_std_b)
            truth.append(truth_b)
            sample_weight.append(weights_b)

        # concat all results
        preds_mean = tf.concat(preds_mean, axis=0)
        preds_std = tf.concat(preds_std, axis=0)

        truth = tf.concat(truth, axis=0)
        sample_weight = tf.concat(sample_weight, axis=0)

        # trim off extra from last batch
        truth = truth[:num_samples, :].numpy()
        preds_mean = preds_mean[:num_samples, :].numpy()
        preds_std = preds_std[:num_samples, :].numpy()
        sample_weight = sample_weight[:num_samples, :].numpy()

        return {
            'preds_mean': preds_mean,
            'preds_std': preds_std,
            'truth': truth,
            'weights': sample_weight,
        }

    def score_matrix(self, accessilibility_peak_matrix):
        idx = np.arange(accessilibility_peak_matrix.shape[1])
        results = []

        for sample_i in range(accessilibility_peak_matrix.shape[0]):
            peaks_i = accessilibility_peak_matrix[sample_i]

            means, _ = self.eval_vector(peaks_i, idx, samples=1)

            results.append(means)

        return np.stack(results)


class VLP(VariationalPeakModel):
    def __init__(self, *args, **kwargs):
        self.activation = tf.tanh
        self.layers = 2
        VariationalPeakModel.__init__(self, *args, **kwargs)

    def create_model(self, **kwargs):
        cell_inputs = [tf.keras.layers.Input(shape=(self.num_inputs[i],))
                       for i in range(len(self.num_inputs))]

        # make a channel for each cell type
        cell_channels = []

        kl_scale = 1.0 / (self.batch_size * 5000)
        for i in range(len(self.num_inputs)):
            # make input layer for cell
            last = cell_inputs[i]
            for j in range(self.layers):
                num_units = max(2, int(self.num_inputs[i] / (2 * (j + 1))))
                last = DenseFlipout(num_units, kl_scale, activation=self.activation)(last)
            cell_channels.append(last)

        # merge together all cell channels
        last = tf.keras.layers.concatenate(cell_channels) if len(cell_channels) > 1 else cell_channels[0]

        outputs = DenseFlipout(self.num_outputs, kl_scale, name="output_layer")(last)

        model = tf.keras.models.Model(inputs=cell_inputs, outputs=outputs)
        return model


def show(label, a):
    print(label, np.round(np.asarray(a, dtype=np.float64), 3).tolist())


rng = np.random.default_rng(args.seed)
genome = synthetic_genome(args.size, rng)
model = VLP(genome, test_celltypes=["IMR-90"])
model.train(20)

n_valid = args.size - int(args.size * 0.7)
valid = model.test(n_valid * 2)
show("valid mean prediction per target:", valid['preds_mean'].mean(axis=0))
show("valid mean std per target:", valid['preds_std'].mean(axis=0))
test = model.test(n_valid, mode=TEST)
truth = test['truth']
show("test mean prediction per target:", test['preds_mean'].mean(axis=0))
show("test accuracy per target:", ((test['preds_mean'] > 0.5) == (truth > 0.5)).mean(axis=0))

accessibility = (rng.random((3, args.size)) < 0.35).astype("float32")
scores = model.score_matrix(accessibility)
print("score_matrix shape:", list(scores.shape))
show("score_matrix mean per sample:", scores.mean(axis=(1, 2)))
