"""The only package that touches TensorFlow and Keras internals; each module owns one concern.

Imports flow one way (tests/test_layering.py checks it): versions, then frames, then counters,
types and keras, then reading, then hooks. Nothing here imports TensorFlow at module import time.
"""
