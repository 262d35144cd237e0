"""Zero-edit prevention: warm each profiled tf.function with one general trace at its first call."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfretrace.runtime.prevent.profile import Profile
    from tfretrace.runtime.prevent.profile_file import load_profile
    from tfretrace.runtime.prevent.runtime import Prevention

ENV = "TFRETRACE_PREVENT"

# Loaded at first use: the warm-up checks bring the fix planner's rules and kinds, which a run
# without a profile (tfretrace run asks profile_from_env first) never needs.
_LAZY = {
    "Profile": "tfretrace.runtime.prevent.profile",
    "load_profile": "tfretrace.runtime.prevent.profile_file",
    "Prevention": "tfretrace.runtime.prevent.runtime",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["ENV", "Prevention", "Profile", "load_profile", "prevent", "profile_from_env"]


def prevent(profile: str | os.PathLike[str], *, monitor: Any = None, learn: bool = True) -> Prevention:
    """Start preventing the shape retraces a profile (or a saved session) recorded; also a context manager.

    ``tfretrace.prevent("profile.json")`` works for the rest of the process (``.stop()`` returns
    the session with its report); ``with tfretrace.prevent("profile.json") as p:`` for a block.
    With no ``monitor``, the process-wide one is used if installed, else a quiet one of its own.
    ``learn``: at stop, widen the profile file with the calls the run met outside it (a profile
    that does not exist yet is recorded); a saved session used as a profile is never rewritten.
    """
    from tfretrace.runtime.monitor import current
    from tfretrace.runtime.prevent.profile_file import load_profile
    from tfretrace.runtime.prevent.runtime import Prevention

    loaded = load_profile(profile, missing_ok=learn)
    if monitor is None:
        process = current()
        monitor = process if process is not None and process.active else None
    return Prevention(loaded, monitor, learn=learn).start()


def profile_from_env(environ: dict[str, str] | None = None) -> str | None:
    """The profile named by TFRETRACE_PREVENT, or None."""
    env = os.environ if environ is None else environ
    value = env.get(ENV, "").strip()
    return value or None
