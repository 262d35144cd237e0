"""What one fix kind's module declares for the registry (fix.kinds): its name, safety class and anchor checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tfretrace.fix.core.anchor_base import Anchors, Check
from tfretrace.fix.core.anchor_moves import Derive
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement


@dataclass(frozen=True)
class Kind:
    """One edit kind, as its module in fix.kinds declares it.

    ``check``: where a saved session's edit of this kind may land and what it may say (None: the
    kind makes no edit of its own). ``derive``: for a move, every edit group tfretrace makes for it
    from the file as it is now (a step must carry a move whole). ``whole``: a check of the step's
    edits together, for a kind whose added lines are not a move (keras-pad-rows' helper).
    ``generalizes``: its traces are generalized, so floating-point results may differ in their last
    digits (the step's ``changes``): dimensions open (a signature, reduce_retracing, a dataset's
    element_spec) or a Python value, or a list of tensors, passed as one tensor; keras-pad-rows for
    the same consequence: a row that was in a partial batch is computed in a full one, and a batch
    of another size may round differently in its last bit.
    """

    name: str
    safety: KindSafety
    check: Check | None = None
    derive: Derive | None = None
    whole: Callable[[Anchors, tuple[Replacement, ...]], str | None] | None = None
    generalizes: bool = False
