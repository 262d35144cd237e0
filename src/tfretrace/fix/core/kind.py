"""What one fix kind's module declares for the registry (fix.kinds): its name, safety class and anchor checks."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from tfretrace.fix.core.anchor_base import Anchors, Check
from tfretrace.fix.core.anchor_moves import Derive
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement, SourceReader

# What a step changes in the results besides the count (a step's ``changes``): fixed words.
CHANGES_EXAMPLES = "examples"
CHANGES_DTYPE = "dtype"
CHANGES_RANDOM = "random-stream"
CHANGES_SAVED_SIGNATURE = "saved-model-signature"
CHANGES_FLOAT_DIGITS = "float-last-digits"


@dataclass(frozen=True)
class Row:
    """A kind's row in the catalogue table (docs/fix-catalogue.md, generated from the registry)."""

    safety: str  # its class, as the catalogue says it ("safe when checked")
    checks: str  # what it checks
    unchanged: str = ""  # the programs of tests/data/fix_safety it must leave unchanged


@dataclass(frozen=True)
class MoveSite:
    """What a move kind's own conditions read: the file's tree, the loop or def the move leaves, the moved statement."""

    tree: ast.Module
    scope: ast.AST
    moved: ast.stmt
    names: tuple[str, ...]  # the names the function is called by


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
    ``row``: its catalogue row. ``changes``: what each of its steps changes in the results whatever
    the body (drop-remainder skips examples), one of the CHANGES words. ``note``: the sentence a
    generalizing step of it adds to its summary, where not the float digits' usual one.
    ``call_sites``: its edits are at the call sites, and a recorded site none reaches is left to the
    user. ``drops_data``: it changes what is computed, so it is taken only where no declaration
    removes as many traces. ``through_another``: it makes no edit of its own, another kind's step does.
    For a kind safe only under its conditions (fix.planning.safety_plan): ``not_a_move``: none of the
    move checks applies; ``whole_conditions``: its own check replaces them all (a wrap that leaves no
    loop); ``move_conditions``: its own check of the move replaces the check of the moved code's reads;
    ``moves_def``: the moved statement is the def its traces run.
    """

    name: str
    safety: KindSafety
    check: Check | None = None
    derive: Derive | None = None
    whole: Callable[[Anchors, tuple[Replacement, ...]], str | None] | None = None
    generalizes: bool = False
    row: Row | None = None
    changes: str | None = None
    note: str | None = None
    call_sites: bool = False
    drops_data: bool = False
    through_another: bool = False
    not_a_move: bool = False
    whole_conditions: Callable[[tuple[Replacement, ...], SourceReader], str | None] | None = None
    move_conditions: Callable[[MoveSite], str | None] | None = None
    moves_def: bool = False
