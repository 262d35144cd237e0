"""Comparing runs: functions matched across sessions, and the baselines tests compare against."""
