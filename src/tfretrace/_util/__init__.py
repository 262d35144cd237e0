"""Foundations every layer may use: file writes, text, checked JSON readers, tracebacks, project settings."""
