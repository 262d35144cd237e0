"""FixError, the one exception ``tfretrace fix`` turns into a line for the user and exit status 2."""

from __future__ import annotations


class FixError(Exception):
    """Why the plan's edits cannot be made: one line for the user, nothing written."""
