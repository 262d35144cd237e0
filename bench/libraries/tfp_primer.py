"""Held-out program in the style of TF Probability's "A primer on distributions" and its joint
distribution tutorial: batches of distributions, a JointDistributionSequential per prior, a
tf.function log-probability and a few steps of MCMC. Needs tensorflow-probability and tf-keras."""

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

tfd = tfp.distributions

# Scalar and batch distributions: sample and log_prob (eager).
normal = tfd.Normal(loc=0.0, scale=1.0)
print("sample", normal.sample(3).shape, "log_prob", float(normal.log_prob(0.0)))
batch = tfd.Normal(loc=[-1.0, 0.0, 1.0], scale=[1.0, 0.5, 2.0])
print("batch", batch.batch_shape, batch.sample(4).shape)
mvn = tfd.MultivariateNormalDiag(loc=[1.0, -1.0], scale_diag=[1.0, 2.0])
print("mvn", mvn.event_shape, float(mvn.log_prob([0.0, 0.0])))

# One joint model per prior scale, as a sweep over priors does.
observed = tf.constant(np.random.default_rng(0).normal(1.0, 1.0, size=20), tf.float32)


def make_model(prior_scale):
    return tfd.JointDistributionSequential([
        tfd.Normal(loc=0.0, scale=prior_scale),
        lambda mu: tfd.Independent(tfd.Normal(loc=tf.fill([20], mu), scale=1.0), reinterpreted_batch_ndims=1),
    ])


for prior_scale in (0.5, 1.0, 2.0, 4.0):
    model = make_model(prior_scale)
    print("joint", prior_scale, [s.as_list() for s in model.event_shape])


@tf.function
def target_log_prob(mu):
    return make_model(1.0).log_prob([mu, observed])


kernel = tfp.mcmc.HamiltonianMonteCarlo(target_log_prob, step_size=0.1, num_leapfrog_steps=3)


@tf.function
def run_chain(seed):
    return tfp.mcmc.sample_chain(num_results=50, num_burnin_steps=20, current_state=tf.constant(0.0),
                                 kernel=kernel, trace_fn=None, seed=seed)


for seed in (1, 2):
    samples = run_chain(tf.constant([seed, 0], tf.int32))
    print("posterior mean", round(float(tf.reduce_mean(samples)), 3))
