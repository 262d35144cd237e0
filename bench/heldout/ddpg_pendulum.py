"""Held-out: DDPG on the inverted pendulum, one tf.function update per environment step (keras-io).

Source: keras-team/keras-io, examples/rl/ddpg_pendulum.py at commit
001fb3578b269cd688481c7ad49656c2dc520fd4 (amifunny; the tf.keras version). License: Apache-2.0.
Reduced: a numpy pendulum (gym Pendulum's dynamics and cost, 3 numbers of state, one torque in
[-2, 2]) instead of gym, 3 episodes of --size steps, 64-unit layers, batch 32, no plot or saved
weights, `Input(shape=(n,))` and the models' tf.Variables (`v.value`) for Keras 3. Kept:
`Buffer.update`, a `@tf.function` method fed float64 batches from numpy buffers, and
`@tf.function update_target(target_weights, weights, tau)` called with the lists of the actor's and
the critic's variables and a Python float tau after every step.
"""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=30, help="steps per episode")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)


class Pendulum:
    """Gym's Pendulum dynamics: state (cos, sin, angular velocity), reward minus the cost."""

    def __init__(self, steps):
        self.steps = steps

    def reset(self):
        self.th, self.thdot, self.t = np.random.uniform(-np.pi, np.pi), np.random.uniform(-1, 1), 0
        return np.array([np.cos(self.th), np.sin(self.th), self.thdot])

    def step(self, action):
        u = float(np.clip(action[0], -2.0, 2.0))
        norm = ((self.th + np.pi) % (2 * np.pi)) - np.pi
        cost = norm**2 + 0.1 * self.thdot**2 + 0.001 * u**2
        self.thdot = np.clip(self.thdot + (3 * 10.0 / 2 * np.sin(self.th) + 3.0 * u) * 0.05, -8, 8)
        self.th = self.th + self.thdot * 0.05
        self.t += 1
        return np.array([np.cos(self.th), np.sin(self.th), self.thdot]), -cost, self.t >= self.steps, {}


env = Pendulum(args.size)
num_states, num_actions = 3, 1
upper_bound, lower_bound = 2.0, -2.0


class OUActionNoise:
    def __init__(self, mean, std_deviation, theta=0.15, dt=1e-2, x_initial=None):
        self.theta = theta
        self.mean = mean
        self.std_dev = std_deviation
        self.dt = dt
        self.x_initial = x_initial
        self.reset()

    def __call__(self):
        x = (self.x_prev + self.theta * (self.mean - self.x_prev) * self.dt
             + self.std_dev * np.sqrt(self.dt) * np.random.normal(size=self.mean.shape))
        self.x_prev = x
        return x

    def reset(self):
        self.x_prev = self.x_initial if self.x_initial is not None else np.zeros_like(self.mean)


class Buffer:
    def __init__(self, buffer_capacity=100000, batch_size=64):
        self.buffer_capacity = buffer_capacity
        self.batch_size = batch_size
        self.buffer_counter = 0
        self.state_buffer = np.zeros((self.buffer_capacity, num_states))
        self.action_buffer = np.zeros((self.buffer_capacity, num_actions))
        self.reward_buffer = np.zeros((self.buffer_capacity, 1))
        self.next_state_buffer = np.zeros((self.buffer_capacity, num_states))

    def record(self, obs_tuple):
        index = self.buffer_counter % self.buffer_capacity
        self.state_buffer[index] = obs_tuple[0]
        self.action_buffer[index] = obs_tuple[1]
        self.reward_buffer[index] = obs_tuple[2]
        self.next_state_buffer[index] = obs_tuple[3]
        self.buffer_counter += 1

    @tf.function
    def update(self, state_batch, action_batch, reward_batch, next_state_batch):
        with tf.GradientTape() as tape:
            target_actions = target_actor(next_state_batch)
            y = reward_batch + gamma * target_critic([next_state_batch, target_actions])
            critic_value = critic_model([state_batch, action_batch])
            critic_loss = tf.math.reduce_mean(tf.math.square(y - critic_value))
        critic_grad = tape.gradient(critic_loss, critic_model.trainable_variables)
        critic_optimizer.apply_gradients(zip(critic_grad, critic_model.trainable_variables))
        with tf.GradientTape() as tape:
            actions = actor_model(state_batch)
            critic_value = critic_model([state_batch, actions])
            actor_loss = -tf.math.reduce_mean(critic_value)
        actor_grad = tape.gradient(actor_loss, actor_model.trainable_variables)
        actor_optimizer.apply_gradients(zip(actor_grad, actor_model.trainable_variables))

    def learn(self):
        record_range = min(self.buffer_counter, self.buffer_capacity)
        batch_indices = np.random.choice(record_range, self.batch_size)
        state_batch = tf.convert_to_tensor(self.state_buffer[batch_indices])
        action_batch = tf.convert_to_tensor(self.action_buffer[batch_indices])
        reward_batch = tf.convert_to_tensor(self.reward_buffer[batch_indices])
        reward_batch = tf.cast(reward_batch, dtype=tf.float32)
        next_state_batch = tf.convert_to_tensor(self.next_state_buffer[batch_indices])
        self.update(state_batch, action_batch, reward_batch, next_state_batch)


def tf_variables(model):
    """The model's tf.Variables: what `model.variables` gave under tf.keras (Keras 3 wraps them)."""
    return [v.value for v in model.variables]


@tf.function
def update_target(target_weights, weights, tau):
    for a, b in zip(target_weights, weights):
        a.assign(b * tau + a * (1 - tau))


def get_actor():
    last_init = tf.random_uniform_initializer(minval=-0.003, maxval=0.003)
    inputs = layers.Input(shape=(num_states,))
    out = layers.Dense(64, activation="relu")(inputs)
    out = layers.BatchNormalization()(out)
    out = layers.Dense(64, activation="relu")(out)
    out = layers.BatchNormalization()(out)
    outputs = layers.Dense(1, activation="tanh", kernel_initializer=last_init)(out)
    outputs = outputs * upper_bound
    return tf.keras.Model(inputs, outputs)


def get_critic():
    state_input = layers.Input(shape=(num_states,))
    state_out = layers.Dense(16, activation="relu")(state_input)
    state_out = layers.BatchNormalization()(state_out)
    state_out = layers.Dense(32, activation="relu")(state_out)
    state_out = layers.BatchNormalization()(state_out)
    action_input = layers.Input(shape=(num_actions,))
    action_out = layers.Dense(32, activation="relu")(action_input)
    action_out = layers.BatchNormalization()(action_out)
    concat = layers.Concatenate()([state_out, action_out])
    out = layers.Dense(64, activation="relu")(concat)
    out = layers.BatchNormalization()(out)
    outputs = layers.Dense(1)(out)
    return tf.keras.Model([state_input, action_input], outputs)


def policy(state, noise_object):
    sampled_actions = tf.squeeze(actor_model(state))
    noise = noise_object()
    sampled_actions = sampled_actions.numpy() + noise
    legal_action = np.clip(sampled_actions, lower_bound, upper_bound)
    return [np.squeeze(legal_action)]


std_dev = 0.2
ou_noise = OUActionNoise(mean=np.zeros(1), std_deviation=float(std_dev) * np.ones(1))
actor_model = get_actor()
critic_model = get_critic()
target_actor = get_actor()
target_critic = get_critic()
target_actor.set_weights(actor_model.get_weights())
target_critic.set_weights(critic_model.get_weights())
critic_optimizer = tf.keras.optimizers.Adam(0.002)
actor_optimizer = tf.keras.optimizers.Adam(0.001)
total_episodes = 3
gamma = 0.99
tau = 0.005
buffer = Buffer(50000, 32)

ep_reward_list = []
for ep in range(total_episodes):
    prev_state = env.reset()
    episodic_reward = 0
    while True:
        tf_prev_state = tf.expand_dims(tf.convert_to_tensor(prev_state), 0)
        action = policy(tf_prev_state, ou_noise)
        state, reward, done, info = env.step(action)
        buffer.record((prev_state, action, reward, state))
        episodic_reward += reward
        buffer.learn()
        update_target(tf_variables(target_actor), tf_variables(actor_model), tau)
        update_target(tf_variables(target_critic), tf_variables(critic_model), tau)
        if done:
            break
        prev_state = state
    ep_reward_list.append(episodic_reward)
    print(f"Episode * {ep} * Avg Reward is ==> {np.mean(ep_reward_list[-40:]):.4f}")
