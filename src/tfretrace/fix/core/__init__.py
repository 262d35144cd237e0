"""Shared by every fix kind and the planner: source reading, TensorFlow's cache rules, replay, safety words."""
