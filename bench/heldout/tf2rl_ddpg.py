"""Held-out: tf2rl's DDPG agent and trainer, the action body given the noise scale as a Python float (GitHub).

Source: keiohta/tf2rl, tf2rl/algos/ddpg.py (`Actor`, `Critic`, `DDPG`) at commit
4f7ec642f9075540683766d03a1ebadfc43661f9 and tf2rl/experiments/trainer.py (`Trainer.__call__`,
`evaluate_policy`) at commit 7a8d62dc316d7d8c52ff45f3985cf276d7557640, with tf2rl/misc's
`huber_loss` and `update_target_variables` and the `OffPolicyAgent` defaults. License: MIT.
Reduced: a NumPy pendulum (Pendulum-v0's dynamics and reward, seeded starts) instead of gym; a
NumPy ring buffer instead of cpprb; --size environment steps (a third of them warm-up) instead
of 1e6, tests every 100 steps over 2 episodes of 50 steps, batches of 32 and layers of 64 and
48 units; the summary file written into a temporary folder; no checkpoints, rendering or
frames-per-second; episode and test returns printed (rounded) instead of logged. Kept: `Actor`
and `Critic` built by a dummy call in their constructors, Adams built by the first `_train_body`
call, `get_action` calling the `@tf.function` `_get_action_body(state, self.sigma * test,
max_action)` (a Python float: 0.0 while training, sigma while testing) that draws its noise with
`tf.random.normal`, `_train_body` and its nested `_compute_td_error_body` on the sampled NumPy
batches, the soft target updates, and the trainer's warm-up, update and evaluation schedule.
"""

import argparse
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=450, help="environment steps")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)


def huber_loss(x, delta=1.):
    delta = tf.ones_like(x) * delta
    less_than_max = 0.5 * tf.square(x)
    greater_than_max = delta * (tf.abs(x) - 0.5 * delta)
    return tf.where(tf.abs(x) <= delta, x=less_than_max, y=greater_than_max)


def update_target_variables(target_variables, source_variables, tau=1.0):
    for target_var, source_var in zip(target_variables, source_variables):
        target_var.assign((1. - tau) * target_var + tau * source_var)


class Pendulum:
    """Pendulum-v0: swing up and balance a pole by a torque in [-2, 2]."""

    max_speed, max_torque, dt, g, m, length = 8., 2., .05, 10., 1., 1.
    _max_episode_steps = 200

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.state = self.rng.uniform([-np.pi, -1.], [np.pi, 1.])
        return self._obs()

    def _obs(self):
        theta, thetadot = self.state
        return np.array([np.cos(theta), np.sin(theta), thetadot], dtype=np.float32)

    def step(self, u):
        th, thdot = self.state
        u = float(np.clip(u, -self.max_torque, self.max_torque)[0])
        angle = ((th + np.pi) % (2 * np.pi)) - np.pi
        cost = angle ** 2 + .1 * thdot ** 2 + .001 * u ** 2
        newthdot = thdot + (-3 * self.g / (2 * self.length) * np.sin(th + np.pi)
                            + 3. / (self.m * self.length ** 2) * u) * self.dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        self.state = np.array([th + newthdot * self.dt, newthdot])
        return self._obs(), -cost, False, {}

    def sample_action(self):
        return self.rng.uniform(-self.max_torque, self.max_torque, (1,)).astype(np.float32)


class ReplayBuffer:
    def __init__(self, size, obs_dim, act_dim):
        self.obs = np.zeros((size, obs_dim), np.float32)
        self.act = np.zeros((size, act_dim), np.float32)
        self.next_obs = np.zeros((size, obs_dim), np.float32)
        self.rew = np.zeros((size, 1), np.float32)
        self.done = np.zeros((size, 1), np.float32)
        self.size, self.n, self.rng = size, 0, np.random.default_rng(args.seed + 1)

    def add(self, obs, act, next_obs, rew, done):
        i = self.n % self.size
        self.obs[i], self.act[i], self.next_obs[i], self.rew[i], self.done[i] = obs, act, next_obs, rew, done
        self.n += 1

    def sample(self, batch_size):
        idx = self.rng.integers(0, min(self.n, self.size), batch_size)
        return {"obs": self.obs[idx], "act": self.act[idx], "next_obs": self.next_obs[idx], "rew": self.rew[idx],
                "done": self.done[idx]}


class Actor(tf.keras.Model):
    def __init__(self, state_shape, action_dim, max_action, units=(400, 300), name="Actor"):
        super().__init__(name=name)

        self.l1 = Dense(units[0], name="L1")
        self.l2 = Dense(units[1], name="L2")
        self.l3 = Dense(action_dim, name="L3")

        self.max_action = max_action

        with tf.device("/cpu:0"):
            self(tf.constant(np.zeros(shape=(1, *state_shape), dtype=np.float32)))

    def call(self, inputs):
        features = tf.nn.relu(self.l1(inputs))
        features = tf.nn.relu(self.l2(features))
        features = self.l3(features)
        action = self.max_action * tf.nn.tanh(features)
        return action


class Critic(tf.keras.Model):
    def __init__(self, state_shape, action_dim, units=(400, 300), name="Critic"):
        super().__init__(name=name)

        self.l1 = Dense(units[0], name="L1")
        self.l2 = Dense(units[1], name="L2")
        self.l3 = Dense(1, name="L3")

        dummy_state = tf.constant(np.zeros(shape=(1, *state_shape), dtype=np.float32))
        dummy_action = tf.constant(np.zeros(shape=[1, action_dim], dtype=np.float32))
        with tf.device("/cpu:0"):
            self([dummy_state, dummy_action])

    def call(self, inputs):
        states, actions = inputs
        features = tf.concat([states, actions], axis=1)
        features = tf.nn.relu(self.l1(features))
        features = tf.nn.relu(self.l2(features))
        features = self.l3(features)
        return features


class DDPG:
    def __init__(self, state_shape, action_dim, name="DDPG", max_action=1., lr_actor=0.001, lr_critic=0.001,
                 actor_units=(400, 300), critic_units=(400, 300), sigma=0.1, tau=0.005, n_warmup=int(1e4),
                 batch_size=256, discount=0.99, max_grad=10., update_interval=1):
        # OffPolicyAgent's settings
        self.policy_name, self.n_warmup, self.batch_size = name, n_warmup, batch_size
        self.discount, self.max_grad, self.update_interval, self.device = discount, max_grad, update_interval, "/cpu:0"

        # Define and initialize Actor network
        self.actor = Actor(state_shape, action_dim, max_action, actor_units)
        self.actor_target = Actor(state_shape, action_dim, max_action, actor_units)
        self.actor_optimizer = tf.keras.optimizers.Adam(learning_rate=lr_actor)
        update_target_variables(self.actor_target.weights, self.actor.weights, tau=1.)

        # Define and initialize Critic network
        self.critic = Critic(state_shape, action_dim, critic_units)
        self.critic_target = Critic(state_shape, action_dim, critic_units)
        self.critic_optimizer = tf.keras.optimizers.Adam(learning_rate=lr_critic)
        update_target_variables(self.critic_target.weights, self.critic.weights, tau=1.)

        # Set hyperparameters
        self.sigma = sigma
        self.tau = tau

    def get_action(self, state, test=False, tensor=False):
        is_single_state = len(state.shape) == 1
        if not tensor:
            assert isinstance(state, np.ndarray)
        state = np.expand_dims(state, axis=0).astype(np.float32) if is_single_state else state
        action = self._get_action_body(
            tf.constant(state), self.sigma * test, tf.constant(self.actor.max_action, dtype=tf.float32))
        if tensor:
            return action
        else:
            return action.numpy()[0] if is_single_state else action.numpy()

    @tf.function
    def _get_action_body(self, state, sigma, max_action):
        with tf.device(self.device):
            action = self.actor(state)
            action += tf.random.normal(shape=action.shape, mean=0., stddev=sigma, dtype=tf.float32)
            return tf.clip_by_value(action, -max_action, max_action)

    def train(self, states, actions, next_states, rewards, done, weights=None):
        if weights is None:
            weights = np.ones_like(rewards)
        actor_loss, critic_loss, td_errors = self._train_body(states, actions, next_states, rewards, done, weights)

        if actor_loss is not None:
            tf.summary.scalar(name=self.policy_name + "/actor_loss", data=actor_loss)
        tf.summary.scalar(name=self.policy_name + "/critic_loss", data=critic_loss)

        return td_errors

    @tf.function
    def _train_body(self, states, actions, next_states, rewards, done, weights):
        with tf.device(self.device):
            with tf.GradientTape() as tape:
                td_errors = self._compute_td_error_body(states, actions, next_states, rewards, done)
                critic_loss = tf.reduce_mean(huber_loss(td_errors, delta=self.max_grad) * weights)

            critic_grad = tape.gradient(critic_loss, self.critic.trainable_variables)
            self.critic_optimizer.apply_gradients(zip(critic_grad, self.critic.trainable_variables))

            with tf.GradientTape() as tape:
                next_action = self.actor(states)
                actor_loss = -tf.reduce_mean(self.critic([states, next_action]))

            actor_grad = tape.gradient(actor_loss, self.actor.trainable_variables)
            self.actor_optimizer.apply_gradients(zip(actor_grad, self.actor.trainable_variables))

            # Update target networks
            update_target_variables(self.critic_target.weights, self.critic.weights, self.tau)
            update_target_variables(self.actor_target.weights, self.actor.weights, self.tau)

            return actor_loss, critic_loss, td_errors

    @tf.function
    def _compute_td_error_body(self, states, actions, next_states, rewards, dones):
        with tf.device(self.device):
            not_dones = 1. - dones
            target_Q = self.critic_target([next_states, self.actor_target(next_states)])
            target_Q = rewards + (not_dones * self.discount * target_Q)
            target_Q = tf.stop_gradient(target_Q)
            current_Q = self.critic([states, actions])
            td_errors = target_Q - current_Q
        return td_errors


class Trainer:
    def __init__(self, policy, env, test_env, max_steps, episode_max_steps, test_interval, test_episodes, logdir):
        self._policy, self._env, self._test_env = policy, env, test_env
        self._max_steps, self._episode_max_steps = max_steps, episode_max_steps
        self._test_interval, self._test_episodes = test_interval, test_episodes
        # prepare TensorBoard output
        self.writer = tf.summary.create_file_writer(logdir)
        self.writer.set_as_default()

    def __call__(self):
        total_steps = 0
        tf.summary.experimental.set_step(total_steps)
        episode_steps = 0
        episode_return = 0
        n_episode = 0

        replay_buffer = ReplayBuffer(self._max_steps, 3, 1)

        obs = self._env.reset()

        while total_steps < self._max_steps:
            if total_steps < self._policy.n_warmup:  # noqa: SIM108
                action = self._env.sample_action()
            else:
                action = self._policy.get_action(obs)

            next_obs, reward, done, _ = self._env.step(action)
            episode_steps += 1
            episode_return += reward
            total_steps += 1
            tf.summary.experimental.set_step(total_steps)

            done_flag = done
            if episode_steps == self._env._max_episode_steps:
                done_flag = False
            replay_buffer.add(obs=obs, act=action, next_obs=next_obs, rew=reward, done=done_flag)
            obs = next_obs

            if done or episode_steps == self._episode_max_steps:
                obs = self._env.reset()

                n_episode += 1
                print(f"Total Epi: {n_episode: 5} Steps: {total_steps: 7} Episode Steps: {episode_steps: 5} "
                      f"Return: {episode_return: 5.2f}")
                tf.summary.scalar(name="Common/training_return", data=episode_return)

                episode_steps = 0
                episode_return = 0

            if total_steps >= self._policy.n_warmup and total_steps % self._policy.update_interval == 0:
                samples = replay_buffer.sample(self._policy.batch_size)
                self._policy.train(samples["obs"], samples["act"], samples["next_obs"], samples["rew"],
                                   np.array(samples["done"], dtype=np.float32), None)
                if total_steps % self._test_interval == 0:
                    avg_test_return = self.evaluate_policy(total_steps)
                    print(f"Evaluation Total Steps: {total_steps: 7} Average Reward {avg_test_return: 5.2f} over "
                          f"{self._test_episodes: 2} episodes")
                    tf.summary.scalar(name="Common/average_test_return", data=avg_test_return)
                    self.writer.flush()

        tf.summary.flush()

    def evaluate_policy(self, total_steps):
        avg_test_return = 0.
        for _ in range(self._test_episodes):
            episode_return = 0.
            obs = self._test_env.reset()
            done = False
            for _ in range(self._episode_max_steps):
                action = self._policy.get_action(obs, test=True)
                next_obs, reward, done, _ = self._test_env.step(action)
                episode_return += reward
                obs = next_obs
                if done:
                    break
            avg_test_return += episode_return
        return avg_test_return / self._test_episodes


env, test_env = Pendulum(args.seed), Pendulum(args.seed + 100)
policy = DDPG(state_shape=(3,), action_dim=1, max_action=2., actor_units=(64, 48), critic_units=(64, 48),
              n_warmup=args.size // 3, batch_size=32)
with tempfile.TemporaryDirectory() as logdir:
    trainer = Trainer(policy, env, test_env, max_steps=args.size, episode_max_steps=50, test_interval=100,
                      test_episodes=2, logdir=logdir)
    trainer()
    trainer.writer.close()
