"""What the ``changes`` words of applied steps excuse in a changed output: one rule for ``--also-run`` and the benches.

A step's ``changes`` says how it may change the program's results besides its trace count
(fix.planning.step.CHANGES). ``float-last-digits`` (a generalized graph) says printed
floating-point numbers may move in their last digits, and excuses nothing else; the other words
(examples skipped, another dtype, another random stream, a SavedModel signature) say results
change outright and excuse any difference. Only the words of steps ``fix --apply`` writes count:
a step that was not applied changed nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tfretrace.fix.planning.step import CHANGES_FLOAT_DIGITS, plan_steps

FLOAT_DIGITS = CHANGES_FLOAT_DIGITS
# A printed number "moved in its last digits": by at most this share of itself (the 5th
# significant digit), or by 1e-6 near zero.
_LAST_DIGITS = 1e-4
_NEAR_ZERO = 1e-6
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def last_digits_only(before: str, after: str) -> bool:
    """Whether two outputs differ only in printed numbers that agree but for their last digits.

    The text around the numbers must be the same, integers (a step count, an epoch) equal, and
    each pair of other numbers within a relative 1e-4 or 1e-6 apart.
    """
    if _NUMBER.sub("#", before) != _NUMBER.sub("#", after):
        return False
    for a, b in zip(_NUMBER.findall(before), _NUMBER.findall(after), strict=True):
        if not any(c in a + b for c in ".eE"):
            if int(a) != int(b):
                return False
            continue
        x, y = float(a), float(b)
        if abs(x - y) > max(_LAST_DIGITS * max(abs(x), abs(y)), _NEAR_ZERO):
            return False
    return True


def excusing(before: str, after: str, announced: Iterable[str]) -> list[str]:
    """The announced words that explain ``before`` becoming ``after`` (sorted); empty: nothing does."""
    said = sorted(set(announced))
    if before == after:
        return said
    loose = [word for word in said if word != FLOAT_DIGITS]
    if loose:
        return said
    return said if said and last_digits_only(before, after) else []


def applied_changes(functions: Iterable[object], *, unsafe: bool = False) -> set[str]:
    """The ``changes`` words of the steps ``fix --apply`` writes (``unsafe``: with ``--unsafe-fixes``)."""
    top = 1 if unsafe else 0
    return {
        str(step.changes) for report in functions for step in plan_steps(report)
        if step.edits and step.changes and step.tier is not None and step.tier <= top
    }
