"""The fix kinds, one module per edit kind, and their registry: the safety and anchor tables derive from it.

Each module of this package owns one edit kind: its name, its safety class with the argument for
it, the maker that detects and builds its steps, the conditions that decide its class, its anchor
check (where a saved session's edit of that kind may land) and its edit text. ``REGISTRY`` lists
every edit kind once; the tables the planner and ``tfretrace fix --apply`` read are derived from
it: ``KINDS`` (each kind's class and argument, the catalogue's source: docs/fix-catalogue.md),
``CHECKS`` (each kind's anchor check), ``MOVES`` (the edits a move derives from the file now) and
``WHOLE`` (a kind's check of its step's edits together). ``MAKERS`` and ``FINAL_MAKERS`` are the
makers the planner tries, in order; ``KIND_CHANGES``, ``NOTES``, ``CALL_SITE_KINDS``, ``DROPS_DATA`` and
``THROUGH_ANOTHER`` what the planner and ``fix --apply`` read of a kind; ``catalogue_table()`` the
catalogue's table. To add an edit kind: write its module, declaring ``KIND = Kind(...)`` (its
catalogue row included) and its maker, list both here, regenerate the table (tools/fix_catalogue.py)
and add its fixture folder under tests/data/kinds/. Nothing outside this package imports a kind's
module (tests/test_layering.py): the planner and the applier read the registry.

Kinds that make no edit are not listed: advice (``advice``, ``keras-pad``, whose maker is
fix.kinds.keras_pad) and the XLA steps (``xla-bucket``, ``xla-off``, fix.planning.xla_fixes) are
made by hand, and a step of a kind not in ``KINDS`` with edits is unsafe.
"""

from __future__ import annotations

from collections.abc import Callable

from tfretrace.fix.core.anchor_base import Check
from tfretrace.fix.core.anchor_moves import Derive
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.kind import Kind
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.kinds import (
    cast_dtype,
    drop_remainder,
    element_spec,
    hoist_def,
    hoist_factory_call,
    hoist_object,
    hoist_pipeline,
    hoist_wrap,
    input_signature,
    keras_call,
    keras_pad,
    keras_pad_rows,
    neutral_key,
    objects,
    reduce_retracing,
    saved_signature,
    tensor_argument,
    wrap_vectorized_map,
    zero_state,
)

# Every edit kind, in the catalogue's order: the moves proved safe by their conditions, the
# declarations TensorFlow checks, the call-site edits (a Python value as a tensor: safe where TensorFlow
# finds it used only as data), Keras' predict.
REGISTRY: tuple[Kind, ...] = (
    neutral_key.KIND,
    hoist_def.KIND,
    hoist_wrap.KIND,
    hoist_factory_call.KIND,
    hoist_object.KIND,
    hoist_pipeline.KIND,
    wrap_vectorized_map.KIND,
    saved_signature.KIND,
    input_signature.KIND,
    element_spec.KIND,
    keras_pad_rows.KIND,
    reduce_retracing.KIND,
    tensor_argument.KIND,
    cast_dtype.KIND,
    zero_state.KIND,
    drop_remainder.KIND,
    keras_call.KIND,
)

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
Maker = Callable[[FunctionContext, State], "Candidate | list[Candidate] | None"]

# The makers the planner tries at every step, in this order, each for one root cause (a maker may
# make steps of several kinds, advice included: objects.one_object chooses among the hoists).
MAKERS: tuple[Maker, ...] = (
    tensor_argument.python_numbers,
    cast_dtype.dtypes,
    zero_state.none_to_zeros,
    tensor_argument.lists,
    neutral_key.neutral_keys,
    neutral_key.dict_keys,
    tensor_argument.read_only_variables,
    drop_remainder.drop_remainder,
    objects.one_object,
    hoist_object.same_object,
    keras_pad_rows.pad_rows,
    keras_call.predict_as_call,
    keras_pad.predict_buckets,
)

# Makers whose steps change what the __call__ sites pass. A get_concrete_function call passing Python
# values keeps passing them: after such an edit it no longer matches the calls' traces and traces
# on its own, which the replay (traced calls only) cannot count.
CALL_SITE_MAKERS: frozenset[Maker] = frozenset({
    tensor_argument.python_numbers, cast_dtype.dtypes, zero_state.none_to_zeros, tensor_argument.lists,
    neutral_key.neutral_keys, neutral_key.dict_keys,
})

# The last step of a plan, tried in this order: one declaration covering every call, and
# reduce_retracing where none can be written.
FINAL_MAKERS: tuple[Callable[[FunctionContext, State], Candidate | None], ...] = (
    element_spec.element_spec, input_signature.final_signature, reduce_retracing.reduce_retracing,
)
