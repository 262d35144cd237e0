"""The fix kinds, one module per edit kind, and their registry: it finds every kind module and derives the tables.

Each module of this package owns one edit kind: its name, its safety class with the argument for
it, its makers with their phase and order, the conditions that decide its class, its anchor check
(where a saved session's edit of that kind may land), its edit text and its catalogue row, all on
the ``KIND = Kind(...)`` it declares. The registry imports every module of the package (pkgutil) and
reads its ``KIND``; ``REGISTRY`` lists the kinds in their ``position`` order. The tables the planner
and ``tfretrace fix --apply`` read derive from it: ``KINDS`` (each kind's class and argument),
``CHECKS`` (anchor checks), ``MOVES`` (the edits a move derives from the file now), ``WHOLE`` (a
kind's check of its step's edits together), ``MAKERS`` and ``FINAL_MAKERS`` (the makers the planner
tries, by their ``order``), ``CALL_SITE_MAKERS``, ``KIND_CHANGES``, ``NOTES``, ``CALL_SITE_KINDS``,
``DROPS_DATA``, ``THROUGH_ANOTHER``, and ``catalogue_table()`` (docs/fix-catalogue.md's table).
To add an edit kind: write its module declaring its ``KIND`` (row, position and makers included),
regenerate the table (tools/fix_catalogue.py) and add its fixture folder under tests/data/kinds/;
this file does not change. Nothing outside this package imports a kind's module
(tests/test_layering.py): the planner and the applier read the registry.

Kinds that make no edit are not registered: advice (``advice``, ``keras-pad``, whose maker
fix.kinds.keras_pad lists in its module-level ``MAKERS``, as fix.kinds.objects does for the maker
choosing among the hoists and fix.kinds.nested_number for a number inside a dict argument) and the
XLA steps (``xla-bucket``, ``xla-off``, fix.planning.xla_fixes) are made by hand, and a step of a
kind not in ``KINDS`` with edits is unsafe.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from tfretrace.fix.core.anchor_base import Check
from tfretrace.fix.core.anchor_moves import Derive
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.kind import PHASE_FINAL, PHASE_STEP, Kind, MakeSteps
from tfretrace.fix.core.kind import Maker as MakerSpec
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety


def _modules() -> list[object]:
    # Every module of this package, by name: what a module declares does not depend on import order.
    return [importlib.import_module(f"{__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)]


def _unique(values: list[int], what: str) -> None:
    seen = [v for v in values if values.count(v) > 1]
    if seen:
        raise ValueError(f"two {what} declare the same order {sorted(set(seen))}")


def _registry(modules: list[object]) -> tuple[Kind, ...]:
    kinds = [kind for module in modules if isinstance(kind := getattr(module, "KIND", None), Kind)]
    _unique([kind.position for kind in kinds], "kinds")
    return tuple(sorted(kinds, key=lambda kind: kind.position))


def _makers(modules: list[object], kinds: tuple[Kind, ...], phase: str) -> tuple[MakerSpec, ...]:
    declared = [m for kind in kinds for m in kind.makers]
    declared += [m for module in modules for m in getattr(module, "MAKERS", ())]
    found = [m for m in declared if m.phase == phase]
    _unique([m.order for m in found], f"{phase} makers")
    return tuple(sorted(found, key=lambda m: m.order))


_MODULES = _modules()
# Every edit kind, in the catalogue's order (each kind's ``position``): the moves proved safe by their
# conditions, the declarations TensorFlow checks, the call-site edits (a Python value as a tensor: safe
# where TensorFlow finds it used only as data), Keras' predict.
REGISTRY: tuple[Kind, ...] = _registry(_MODULES)

KINDS: dict[str, KindSafety] = {kind.name: kind.safety for kind in REGISTRY}
BY_NAME: dict[str, Kind] = {kind.name: kind for kind in REGISTRY}
CHECKS: dict[str, Check] = {kind.name: kind.check for kind in REGISTRY if kind.check is not None}
MOVES: dict[str, Derive] = {kind.name: kind.derive for kind in REGISTRY if kind.derive is not None}
WHOLE = {kind.name: kind.whole for kind in REGISTRY if kind.whole is not None}
# What each step of a kind changes whatever the body (the step's ``changes``), and a generalizing
# step's own sentence where not the float digits' usual one.
KIND_CHANGES: dict[str, str] = {kind.name: kind.changes for kind in REGISTRY if kind.changes is not None}
NOTES: dict[str, str] = {kind.name: kind.note for kind in REGISTRY if kind.note is not None}
# Kinds whose edits are at the call sites: a recorded site none of them reaches is left to the user.
CALL_SITE_KINDS = frozenset(kind.name for kind in REGISTRY if kind.call_sites)
# Kinds that change what the program computes: taken only where no declaration removes as many traces.
DROPS_DATA = frozenset(kind.name for kind in REGISTRY if kind.drops_data)
# Kinds that make no edit of their own: another kind's step makes them (by tfretrace, not by hand).
THROUGH_ANOTHER = frozenset(kind.name for kind in REGISTRY if kind.through_another)

# The catalogue's last row: the steps made by hand, which no module of this package declares.
_BY_HAND_ROW = "| `advice`, `keras-pad`, `xla-bucket`, `xla-off` | advice | made by hand | |"


def catalogue_table() -> str:
    """The kinds table of docs/fix-catalogue.md, one row per registered kind in the registry's order.

    The document holds this text between its ``kinds table`` markers (tools/fix_catalogue.py
    writes it; tests/test_fix_kinds.py checks it): a kind's row lives on its ``Kind``, not in the doc.
    """
    lines = ["| kind | class | what it checks | must leave unchanged (tests/data/fix_safety) |",
             "| --- | --- | --- | --- |"]
    for kind in REGISTRY:
        if kind.row is None:
            raise ValueError(f"the kind {kind.name!r} declares no catalogue row")
        cells = [f"`{kind.name}`", kind.row.safety, kind.row.checks, kind.row.unchanged]
        lines.append(("| " + " | ".join(cells)).rstrip() + " |")  # an empty last cell is "| |"
    lines.append(_BY_HAND_ROW)
    return "\n".join(lines) + "\n"


def kind_floor(kind: str, checked: str | None = None) -> str | None:
    """Why a kind is unsafe whatever a session file says (None: its steps' recorded class stands).

    ``checked``: the step says TensorFlow traced its generalized signature or its Python value as a
    tensor (probed and value-checked kinds only).
    """
    found = KINDS.get(kind)
    if found is None:
        return f"tfretrace has no safety argument for the kind {kind!r}"
    if (found.probed or found.value_checked) and checked == TF_CHECKED:
        return None
    return found.never_safe


# A maker reads one function's context and the calls as the steps before left them: a step, several, or none.
Maker = MakeSteps

_STEP = _makers(_MODULES, REGISTRY, PHASE_STEP)
_LAST = _makers(_MODULES, REGISTRY, PHASE_FINAL)
# The makers the planner tries at every step, in their order, each for one root cause (a maker may
# make steps of several kinds, advice included: objects.one_object chooses among the hoists).
MAKERS: tuple[Maker, ...] = tuple(m.make for m in _STEP)

# Makers whose steps change what the __call__ sites pass. A get_concrete_function call passing Python
# values keeps passing them: after such an edit it no longer matches the calls' traces and traces
# on its own, which the replay (traced calls only) cannot count.
CALL_SITE_MAKERS: frozenset[Maker] = frozenset(m.make for m in _STEP if m.call_sites)

# The last step of a plan, tried in their order: one declaration covering every call, and
# reduce_retracing where none can be written. A final maker makes one step or none.
FINAL_MAKERS: tuple[Callable[[FunctionContext, State], Candidate | None], ...] = tuple(
    m.make for m in _LAST  # type: ignore[misc]
)
