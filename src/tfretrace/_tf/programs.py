"""The globals of the programs `tfretrace run` executed, kept for the probe that runs once they end."""

from __future__ import annotations

from typing import Any

# python drops the __main__ module once it has run, and the probe runs after (module-level
# tf.functions are found here). Its own module, loaded before the program: `run` keeps each
# program's globals without loading the probe, which only a plan needs.
PROGRAMS: list[dict[str, Any]] = []


def remember_program(namespace: dict[str, Any]) -> None:
    """Keep the executed program's globals for the probe, which runs once the program has finished."""
    PROGRAMS.append(namespace)
