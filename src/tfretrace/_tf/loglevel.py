"""TF_CPP_MIN_LOG_LEVEL: the user's level, lowering it for TensorFlow's import, putting it back."""

from __future__ import annotations

import os

MIN_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"


def silenced(env: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """Why TensorFlow will not log compiles whatever TF_CPP_VMODULE says, or None.

    Compile lines are INFO lines: TF_CPP_MIN_LOG_LEVEL above 0 drops them. Only ``tfretrace run``
    lowers it (see :func:`lower_level`): it owns the process's stderr from before TensorFlow loads,
    so it can hide again every line the user's level hides. A monitor started in the user's own
    code leaves the level alone.
    """
    level = env.get(MIN_LEVEL_ENV, "").strip()
    if level not in ("", "0"):
        return (
            f"XLA compiles not observed: {MIN_LEVEL_ENV}={level} hides TensorFlow's compile log "
            "(INFO lines); run under `tfretrace run`, or unset it"
        )
    return None


def user_level(env: dict[str, str] | os._Environ[str] = os.environ) -> int:
    """The user's TF_CPP_MIN_LOG_LEVEL as TensorFlow reads it: 0 (all) to 3; 0 when unset or foreign."""
    text = env.get(MIN_LEVEL_ENV, "").strip()
    return min(int(text), 3) if text.isascii() and text.isdigit() else 0


def lower_level(env: dict[str, str] | os._Environ[str] = os.environ) -> int:
    """Before TensorFlow loads: log everything; return the user's level, whose lines the tap hides.

    The user's value goes back with :func:`restore_level` right after the import (TensorFlow reads
    it once, as it loads), so child processes see their own setting.
    """
    level = user_level(env)
    if level > 0:
        env[MIN_LEVEL_ENV] = "0"
    return level


def restore_level(original: str | None, env: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Put the user's TF_CPP_MIN_LOG_LEVEL back (None: it was not set)."""
    if original is None:
        env.pop(MIN_LEVEL_ENV, None)
    else:
        env[MIN_LEVEL_ENV] = original
