"""The safety vocabulary every fix kind declares its class in: safe, unsafe, advice, and KindSafety.

As ruff classes its fixes: a **safe** edit leaves what the program computes the same for every
input the original accepted; ``tfretrace fix --apply`` writes only these. An **unsafe** edit may
change results or behaviour in a case tfretrace cannot rule out; each such step says which (its
``unsafe_reason``), and ``--unsafe-fixes`` writes it. **Advice** is made by hand.

The class is declared once per kind, in the kind's module (fix.kinds; the registry derives the
table ``fix.kinds.KINDS``, the catalogue's source: docs/fix-catalogue.md). A kind that is safe
only under conditions (a move out of a loop) is checked by ``move_checks`` and its own module's
conditions; a kind whose conditions tfretrace cannot check (a Python number passed as a tensor:
the body may mix it with another dtype) is unsafe. A step whose function draws random numbers is
unsafe whatever its kind: fewer traces draw other numbers; fix.planning.safety_plan decides.
"""

from __future__ import annotations

from dataclasses import dataclass

SAFE = "safe"
UNSAFE = "unsafe"
ADVICE = "advice"
SAFETIES = (SAFE, UNSAFE, ADVICE)


# A generalized signature that TensorFlow traced with the same outputs (the step's ``checked``).
TF_CHECKED = "tensorflow"


@dataclass(frozen=True)
class KindSafety:
    """A kind's class: ``never_safe`` is the reason it is unsafe, None where its checks can prove it safe.

    ``probed``: safe only where TensorFlow traced the generalized signature with the outputs of
    every trace of the run (``never_safe`` is then the reason where it did not or could not).
    ``maker_checks``: safe only where the conditions its maker reads hold (keras-pad-rows: the
    model computes each row alone, read while predict ran).
    """

    never_safe: str | None
    argument: str
    probed: bool = False
    # Safe where the conditions its maker checked hold (the candidate's ``condition`` says why not).
    maker_checks: bool = False
    # A Python value made a tensor: safe only where TensorFlow traced the body with the dtype to the
    # run's outputs (``checked``) and every trace's graph used the value only as data (the
    # candidate's ``condition`` says where the graph depends on it, or why the dtype cannot hold
    # every value the original took).
    value_checked: bool = False
