"""Held-out: actor-critic on CartPole with a whole episode inside one tf.function (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/reinforcement_learning/actor_critic.ipynb at commit
7c3650212740204359d4ceae481abc79345541be. License: Apache-2.0.
Reduced: a small numpy cart-pole (same 4-number state, 2 actions, reward 1 per step) instead of
gym, --size episodes of at most 60 steps, 32 hidden units, no tqdm/rendering, Keras 3's
`reduction="sum"`. Kept: `train_step(initial_state, model, optimizer, gamma, max_steps_per_episode)`
with a Python float and a Python int passed on every call, the `tf.numpy_function` environment
step, the TensorArray loops of `run_episode` and `get_expected_return`.
"""

import argparse
import collections
import statistics

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=15, help="episodes")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)


class CartPole:
    """Cart-pole dynamics (Euler steps); done when the pole falls or the cart leaves the track."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.state = np.zeros(4)

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + 0.05 * theta_dot**2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos**2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc,
                               theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc])
        done = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 0.21)
        return self.state, 1.0, done, False, {}


env = CartPole(args.seed)
eps = np.finfo(np.float32).eps.item()


class ActorCritic(tf.keras.Model):
    def __init__(self, num_actions, num_hidden_units):
        super().__init__()
        self.common = layers.Dense(num_hidden_units, activation="relu")
        self.actor = layers.Dense(num_actions)
        self.critic = layers.Dense(1)

    def call(self, inputs):
        x = self.common(inputs)
        return self.actor(x), self.critic(x)


model = ActorCritic(2, 32)


@tf.numpy_function(Tout=[tf.float32, tf.int32, tf.int32])
def env_step(action):
    state, reward, done, truncated, info = env.step(action)
    return state.astype(np.float32), np.array(reward, np.int32), np.array(done, np.int32)


def run_episode(initial_state, model, max_steps):
    action_probs = tf.TensorArray(dtype=tf.float32, size=0, dynamic_size=True)
    values = tf.TensorArray(dtype=tf.float32, size=0, dynamic_size=True)
    rewards = tf.TensorArray(dtype=tf.int32, size=0, dynamic_size=True)
    initial_state_shape = initial_state.shape
    state = initial_state
    for t in tf.range(max_steps):
        state = tf.expand_dims(state, 0)
        action_logits_t, value = model(state)
        action = tf.random.categorical(action_logits_t, 1)[0, 0]
        action_probs_t = tf.nn.softmax(action_logits_t)
        values = values.write(t, tf.squeeze(value))
        action_probs = action_probs.write(t, action_probs_t[0, action])
        state, reward, done = env_step(action)
        state.set_shape(initial_state_shape)
        rewards = rewards.write(t, reward)
        if tf.cast(done, tf.bool):
            break
    return action_probs.stack(), values.stack(), rewards.stack()


def get_expected_return(rewards, gamma, standardize=True):
    n = tf.shape(rewards)[0]
    returns = tf.TensorArray(dtype=tf.float32, size=n)
    rewards = tf.cast(rewards[::-1], dtype=tf.float32)
    discounted_sum = tf.constant(0.0)
    discounted_sum_shape = discounted_sum.shape
    for i in tf.range(n):
        discounted_sum = rewards[i] + gamma * discounted_sum
        discounted_sum.set_shape(discounted_sum_shape)
        returns = returns.write(i, discounted_sum)
    returns = returns.stack()[::-1]
    if standardize:
        returns = (returns - tf.math.reduce_mean(returns)) / (tf.math.reduce_std(returns) + eps)
    return returns


huber_loss = tf.keras.losses.Huber(reduction="sum")


def compute_loss(action_probs, values, returns):
    advantage = returns - values
    actor_loss = -tf.math.reduce_sum(tf.math.log(action_probs) * advantage)
    return actor_loss + huber_loss(values, returns)


optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)


@tf.function
def train_step(initial_state, model, optimizer, gamma, max_steps_per_episode):
    with tf.GradientTape() as tape:
        action_probs, values, rewards = run_episode(initial_state, model, max_steps_per_episode)
        returns = get_expected_return(rewards, gamma)
        action_probs, values, returns = [tf.expand_dims(x, 1) for x in [action_probs, values, returns]]
        loss = compute_loss(action_probs, values, returns)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return tf.math.reduce_sum(rewards)


max_steps_per_episode = 60
gamma = 0.99
episodes_reward = collections.deque(maxlen=10)
for i in range(args.size):
    initial_state, info = env.reset()
    initial_state = tf.constant(initial_state, dtype=tf.float32)
    episode_reward = int(train_step(initial_state, model, optimizer, gamma, max_steps_per_episode))
    episodes_reward.append(episode_reward)
    running_reward = statistics.mean(episodes_reward)
    if i % 5 == 0:
        print(f"Episode {i}: reward {episode_reward}, running {running_reward:.2f}")
print(f"after {args.size} episodes: running reward {running_reward:.2f}")
