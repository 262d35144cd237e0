"""What one fix kind's module declares for the registry (fix.kinds): its name, safety, makers, anchor checks."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from tfretrace.fix.core.anchor_base import Anchors, Check
from tfretrace.fix.core.anchor_moves import Derive
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement, SourceReader

# What a step changes in the results besides the count (a step's ``changes``): fixed words.
CHANGES_EXAMPLES = "examples"
CHANGES_DTYPE = "dtype"
CHANGES_RANDOM = "random-stream"
CHANGES_SAVED_SIGNATURE = "saved-model-signature"
CHANGES_FLOAT_DIGITS = "float-last-digits"


# The planner's two phases: every step tries the STEP makers; a plan's last step the FINAL ones.
PHASE_STEP = "step"
PHASE_FINAL = "final"

# A maker reads one function's context and the calls as the steps before left them: a step, several, or none.
MakeSteps = Callable[[FunctionContext, State], "Candidate | list[Candidate] | None"]


@dataclass(frozen=True)
class Maker:
    """One maker a kind's module declares: the planner tries its phase's makers by ``order``, lowest first.

    ``order`` is unique within a phase (the registry refuses two equal ones), spaced by tens so a new
    maker takes a free number between two without renumbering the others. ``call_sites``: its steps
    change what the __call__ sites pass; a get_concrete_function call passing Python values keeps
    passing them, traces on its own after the edit, and the replay (traced calls only) cannot count it.
    A FINAL maker returns one step or None.
    """

    make: MakeSteps
    order: int
    phase: str = PHASE_STEP
    call_sites: bool = False


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
    ``declares_signature``: its step writes the function's signature, so a SavedModel exported from the
    function gets that signature too (fix.planning.restored says so, and adds the saved-signature step).
    ``position``: its place in the catalogue's order, lowest first (unique, spaced by tens).
    ``makers``: the makers of its module, each with its phase and order (a module that declares no
    edit kind lists its makers as a module-level ``MAKERS`` instead: fix.kinds.objects).
    """

    name: str
    safety: KindSafety
    position: int = 0
    makers: tuple[Maker, ...] = ()
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
    declares_signature: bool = False
