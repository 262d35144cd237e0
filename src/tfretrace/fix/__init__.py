"""Fixes: per-function plans checked against TensorFlow's tracing rules, and the edits they carry."""
