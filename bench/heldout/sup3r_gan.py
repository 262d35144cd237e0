"""Held-out: a super-resolution GAN whose tf.function loss takes an adaptive Python weight (GitHub project).

Source: NREL/sup3r, sup3r/models/base.py (`Sup3rGan`: `_tf_generate`, `_tf_discriminate`,
`run_gradient_descent`, `calc_loss_gen_content`, `calc_loss_gen_advers`, `calc_loss_disc`,
`calc_loss`, `calc_val_loss`, `train_epoch`, `update_adversarial_weights`,
`get_weight_update_fraction`, `update_loss_details`, `train`) at commit
71042f8955414062e21ed122d01c42876a2db49e, the parent of its pull request #109 "Avoid unnecessary
retracing" (malihass, 2022-11-07: "5 out of the last 18 calls to <function Sup3rGan.calc_loss>
triggered tf.function retracing", seen running tests/test_train_gan.py's
`test_train_st_weight_update`, whose settings are used here). License: BSD-3-Clause.
Reduced: a spatial-only model (2x enhancement of two features) on --size synthetic smooth 16 x 16
fields with their 8 x 8 block means as low-res inputs, instead of the WIND Toolkit H5 files and
the spatiotemporal 3x/4x model; small Keras-layer lists for the phygnn generator and discriminator
(built once on a dummy batch, so that their weights exist before the first epoch); a numpy batch
handler drawing `n_batches=4` random batches of 4 per epoch and validation batches of 4 (the last
one partial); 6 epochs; Keras 3: the tape watches each Keras variable's `value`; no pandas
history, checkpoints, early stopping or logging: each epoch's losses, trained fractions and
adversarial weight are printed, rounded. Kept: `calc_loss` and its
helpers as `@tf.function`s, `calc_loss` called eagerly from `run_gradient_descent` under the
tape with the Python `weight_gen_advers` and the `train_gen` / `train_disc` flags as keywords
and from `calc_val_loss` with both flags False, the disc-loss bounds deciding per batch which
network trains, and `update_adversarial_weights` multiplying the Python weight by (1 + 0.05) or
its inverse after each epoch from the fraction of batches the discriminator trained
(`weight_gen_advers=1e-6`, `adaptive_update_bounds=(0.9, 0.99)`, `adaptive_update_fraction=0.05`).
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=45, help="hi-res samples")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)


class CustomNetwork:
    """Stand-in for phygnn's CustomNetwork: a list of layers called in turn."""

    def __init__(self, layers):
        self.layers = layers

    @property
    def weights(self):
        return [w for layer in self.layers for w in layer.trainable_weights]


def depth_to_space(x):
    return tf.nn.depth_to_space(x, 2)


class Batch:
    def __init__(self, low_res, high_res):
        self.low_res = low_res
        self.high_res = high_res

    def __len__(self):
        return len(self.low_res)


def coarsen(hi_res, s_enhance=2):
    n, h, w, f = hi_res.shape
    return hi_res.reshape(n, h // s_enhance, s_enhance, w // s_enhance, s_enhance, f).mean(axis=(2, 4))


class BatchHandler:
    """Random training batches of a fixed size; validation batches in order, the last one partial."""

    def __init__(self, data, batch_size=4, n_batches=4, val_split=0.2, s_enhance=2, seed=0):
        n_val = max(1, int(len(data) * val_split))
        self.train_data, self.val_hr = data[:-n_val], data[-n_val:]
        self.batch_size, self.n_batches, self.s_enhance = batch_size, n_batches, s_enhance
        self.rng = np.random.default_rng(seed)
        self.val_data = [Batch(coarsen(self.val_hr[i:i + batch_size], s_enhance), self.val_hr[i:i + batch_size])
                         for i in range(0, len(self.val_hr), batch_size)]

    def __len__(self):
        return self.n_batches

    def __iter__(self):
        for _ in range(self.n_batches):
            idx = self.rng.choice(len(self.train_data), self.batch_size, replace=False)
            high_res = self.train_data[idx]
            yield Batch(coarsen(high_res, self.s_enhance), high_res)


class Sup3rGan:

    def __init__(self, learning_rate=1e-4, learning_rate_disc=None):
        self.generator = CustomNetwork([
            tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            tf.keras.layers.Conv2D(8, 3, padding="same"),
            tf.keras.layers.Lambda(depth_to_space),
            tf.keras.layers.Conv2D(2, 3, padding="same"),
        ])
        self._disc = CustomNetwork([
            tf.keras.layers.Conv2D(8, 3, strides=2, padding="same"),
            tf.keras.layers.LeakyReLU(0.2),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(1),
        ])
        self._tf_discriminate(self._tf_generate(np.zeros((1, 8, 8, 2), np.float32)))
        learning_rate_disc = learning_rate if learning_rate_disc is None else learning_rate_disc
        self.optimizer = tf.keras.optimizers.Adam(learning_rate)
        self.optimizer_disc = tf.keras.optimizers.Adam(learning_rate_disc)
        self.loss_fun = tf.keras.losses.MeanSquaredError()
        self.history = []

    @property
    def generator_weights(self):
        return self.generator.weights

    @property
    def discriminator(self):
        return self._disc

    @property
    def discriminator_weights(self):
        return self.discriminator.weights

    @tf.function
    def _tf_generate(self, low_res):
        hi_res = self.generator.layers[0](low_res)
        for layer in self.generator.layers[1:]:
            hi_res = layer(hi_res)
        return hi_res

    @tf.function
    def _tf_discriminate(self, hi_res):
        out = self.discriminator.layers[0](hi_res)
        for layer in self.discriminator.layers[1:]:
            out = layer(out)
        return out

    @staticmethod
    def get_weight_update_fraction(history, comparison_key, update_bounds=(0.5, 0.95), update_frac=0.0):
        val = history[comparison_key]
        if isinstance(val, (list, tuple, np.ndarray)):
            val = val[-1]

        if val < update_bounds[0]:
            return 1 + update_frac
        elif val > update_bounds[1]:
            return 1 / (1 + update_frac)
        else:
            return 1

    @staticmethod
    def update_loss_details(loss_details, new_data, batch_len, prefix=None):
        assert 'n_obs' in loss_details, 'loss_details must have n_obs to start'
        prior_n_obs = loss_details['n_obs']
        new_n_obs = prior_n_obs + batch_len

        for key, new_value in new_data.items():
            key = key if prefix is None else prefix + key
            new_value = (new_value if not isinstance(new_value, tf.Tensor) else new_value.numpy())

            if key in loss_details:
                saved_value = loss_details[key]
                saved_value *= prior_n_obs
                saved_value += batch_len * new_value
                saved_value /= new_n_obs
                loss_details[key] = saved_value
            else:
                loss_details[key] = new_value

        loss_details['n_obs'] = new_n_obs

        return loss_details

    def run_gradient_descent(self, low_res, hi_res_true, training_weights, optimizer=None, **calc_loss_kwargs):
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            # Keras 3: the tape watches the tf.Variable behind each Keras variable.
            tape.watch([w.value for w in training_weights])

            hi_res_gen = self._tf_generate(low_res)
            loss_out = self.calc_loss(hi_res_true, hi_res_gen, **calc_loss_kwargs)
            loss, loss_details = loss_out

            grad = tape.gradient(loss, training_weights)

        if optimizer is None:
            optimizer = self.optimizer

        optimizer.apply_gradients(zip(grad, training_weights))

        return loss_details

    @tf.function
    def calc_loss_gen_content(self, hi_res_true, hi_res_gen):
        loss_gen_content = self.loss_fun(hi_res_true, hi_res_gen)

        return loss_gen_content

    @staticmethod
    @tf.function
    def calc_loss_gen_advers(disc_out_gen):
        # note that these have flipped labels from the discriminator
        # loss because of the opposite optimization goal
        loss_gen_advers = tf.nn.sigmoid_cross_entropy_with_logits(logits=disc_out_gen,
                                                                  labels=tf.ones_like(disc_out_gen))
        loss_gen_advers = tf.reduce_mean(loss_gen_advers)

        return loss_gen_advers

    @staticmethod
    @tf.function
    def calc_loss_disc(disc_out_true, disc_out_gen):
        logits = tf.concat([disc_out_true, disc_out_gen], axis=0)
        labels = tf.concat([tf.ones_like(disc_out_true), tf.zeros_like(disc_out_gen)], axis=0)

        loss_disc = tf.nn.sigmoid_cross_entropy_with_logits(logits=logits, labels=labels)
        loss_disc = tf.reduce_mean(loss_disc)

        return loss_disc

    @tf.function
    def calc_loss(self, hi_res_true, hi_res_gen, weight_gen_advers=0.001, train_gen=True, train_disc=False):
        if hi_res_gen.shape != hi_res_true.shape:
            msg = (f'The tensor shapes of the synthetic output {hi_res_gen.shape} and true high res '
                   f'{hi_res_true.shape} did not have matching shape!')
            raise RuntimeError(msg)

        disc_out_true = self._tf_discriminate(hi_res_true)
        disc_out_gen = self._tf_discriminate(hi_res_gen)

        loss_gen_content = self.calc_loss_gen_content(hi_res_true, hi_res_gen)
        loss_gen_advers = self.calc_loss_gen_advers(disc_out_gen)
        loss_gen = (loss_gen_content + weight_gen_advers * loss_gen_advers)

        loss_disc = self.calc_loss_disc(disc_out_true, disc_out_gen)

        loss = None
        if train_gen:
            loss = loss_gen
        elif train_disc:
            loss = loss_disc

        loss_details = {'loss_gen': loss_gen,
                        'loss_gen_content': loss_gen_content,
                        'loss_gen_advers': loss_gen_advers,
                        'loss_disc': loss_disc,
                        }

        return loss, loss_details

    def calc_val_loss(self, batch_handler, weight_gen_advers, loss_details):
        loss_details['n_obs'] = 0
        for val_batch in batch_handler.val_data:
            high_res_gen = self._tf_generate(val_batch.low_res)
            _, v_loss_details = self.calc_loss(val_batch.high_res, high_res_gen,
                                               weight_gen_advers=weight_gen_advers,
                                               train_gen=False, train_disc=False)

            loss_details = self.update_loss_details(loss_details, v_loss_details, len(val_batch), prefix='val_')

        return loss_details

    def train_epoch(self, batch_handler, weight_gen_advers, train_gen, train_disc, disc_loss_bounds):
        disc_th_low = np.min(disc_loss_bounds)
        disc_th_high = np.max(disc_loss_bounds)
        loss_details = {'n_obs': 0, 'train_loss_disc': 0}

        only_gen = train_gen and not train_disc
        only_disc = train_disc and not train_gen

        for batch in batch_handler:
            trained_gen = False
            trained_disc = False
            b_loss_details = {}
            loss_disc = loss_details['train_loss_disc']
            disc_too_good = loss_disc <= disc_th_low
            disc_too_bad = (loss_disc > disc_th_high) and train_disc
            gen_too_good = disc_too_bad

            if only_gen or (train_gen and not gen_too_good):
                trained_gen = True
                b_loss_details = self.run_gradient_descent(batch.low_res, batch.high_res, self.generator_weights,
                                                           weight_gen_advers=weight_gen_advers,
                                                           optimizer=self.optimizer,
                                                           train_gen=True, train_disc=False)

            if only_disc or (train_disc and not disc_too_good):
                trained_disc = True
                b_loss_details = self.run_gradient_descent(batch.low_res, batch.high_res,
                                                           self.discriminator_weights,
                                                           weight_gen_advers=weight_gen_advers,
                                                           optimizer=self.optimizer_disc,
                                                           train_gen=False, train_disc=True)

            b_loss_details['gen_trained_frac'] = float(trained_gen)
            b_loss_details['disc_trained_frac'] = float(trained_disc)
            loss_details = self.update_loss_details(loss_details, b_loss_details, len(batch), prefix='train_')

        return loss_details

    def update_adversarial_weights(self, history, adaptive_update_fraction, adaptive_update_bounds,
                                   weight_gen_advers, train_disc):
        if adaptive_update_fraction > 0:
            update_frac = 1
            if train_disc:
                update_frac = self.get_weight_update_fraction(history, 'train_disc_trained_frac',
                                                              update_frac=adaptive_update_fraction,
                                                              update_bounds=adaptive_update_bounds)
                weight_gen_advers *= update_frac

        return weight_gen_advers

    def train(self, batch_handler, n_epoch, weight_gen_advers=0.001, train_gen=True, train_disc=True,
              disc_loss_bounds=(0.45, 0.6), adaptive_update_bounds=(0.9, 0.99), adaptive_update_fraction=0.0):
        for epoch in range(n_epoch):
            loss_details = self.train_epoch(batch_handler, weight_gen_advers, train_gen, train_disc,
                                            disc_loss_bounds)

            loss_details = self.calc_val_loss(batch_handler, weight_gen_advers, loss_details)

            print('Epoch {} gen/disc train loss: {:.4f}/{:.4f} gen/disc val loss: {:.4f}/{:.4f} '
                  'trained gen/disc: {:.2f}/{:.2f} weight_gen_advers: {:.6e}'.format(
                      epoch, loss_details["train_loss_gen"], loss_details["train_loss_disc"],
                      loss_details["val_loss_gen"], loss_details["val_loss_disc"],
                      loss_details["train_gen_trained_frac"], loss_details["train_disc_trained_frac"],
                      weight_gen_advers))
            self.history.append(weight_gen_advers)

            weight_gen_advers = self.update_adversarial_weights(loss_details, adaptive_update_fraction,
                                                                adaptive_update_bounds, weight_gen_advers,
                                                                train_disc)


def synthetic_fields(n, rng):
    """Two smooth 16 x 16 fields per sample (sums of random low-frequency waves), float32."""
    yy, xx = np.meshgrid(np.linspace(0, 1, 16), np.linspace(0, 1, 16), indexing="ij")
    out = np.zeros((n, 16, 16, 2), np.float32)
    for i in range(n):
        for f in range(2):
            kx, ky, ph = rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0), rng.uniform(0, 2 * np.pi)
            out[i, :, :, f] = np.sin(2 * np.pi * (kx * xx + ky * yy) + ph) + 0.1 * rng.normal(size=(16, 16))
    return out


rng = np.random.default_rng(args.seed)
model = Sup3rGan(learning_rate=1e-4, learning_rate_disc=3e-4)
batch_handler = BatchHandler(synthetic_fields(args.size, rng), batch_size=4, n_batches=4, seed=args.seed)

adaptive_update_bounds = (0.9, 0.99)
model.train(batch_handler, n_epoch=6, weight_gen_advers=1e-6, train_gen=True, train_disc=True,
            adaptive_update_bounds=adaptive_update_bounds, adaptive_update_fraction=0.05)
print('weight_gen_advers per epoch:', ['%.6e' % w for w in model.history])
