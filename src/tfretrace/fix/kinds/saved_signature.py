"""Kind saved-signature: a restored function's step, made through the saving function's signature (no edit)."""

from __future__ import annotations

from tfretrace.fix.core.kind import Kind, Row
from tfretrace.fix.core.safety import KindSafety

NAME = "saved-signature"


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(None, "no edit of its own: as safe as the saving function's signature step"),
    row=Row(
        "as the saving function's step",
        "no edit of its own",
    ),
    through_another=True,
    not_a_move=True,
    position=80,
)
