"""One fix-plan step as recorded in a session and who makes it (the headline counts: records.plan_view)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tfretrace.fix.core.kind import (
    CHANGES_DTYPE as CHANGES_DTYPE,
)
from tfretrace.fix.core.kind import (
    CHANGES_EXAMPLES as CHANGES_EXAMPLES,
)
from tfretrace.fix.core.kind import (
    CHANGES_FLOAT_DIGITS as CHANGES_FLOAT_DIGITS,
)
from tfretrace.fix.core.kind import (
    CHANGES_RANDOM as CHANGES_RANDOM,
)
from tfretrace.fix.core.kind import (
    CHANGES_SAVED_SIGNATURE as CHANGES_SAVED_SIGNATURE,
)
from tfretrace.fix.core.safety import ADVICE, SAFE, SAFETIES, TF_CHECKED, UNSAFE
from tfretrace.fix.core.source import Replacement, Span

if TYPE_CHECKING:
    from tfretrace.records.session import Session

# Re-exported: the planner and its tests read the counts where they read the steps; THROUGH_ANOTHER
# (steps a restored function gets through another function's edits) is the session reader's list,
# so that this module does not load the kinds.
from tfretrace.records.plan_view import BY_HAND as BY_HAND
from tfretrace.records.plan_view import BY_TOOL as BY_TOOL
from tfretrace.records.plan_view import THROUGH_ANOTHER as THROUGH_ANOTHER
from tfretrace.records.plan_view import applied_count as applied_count
from tfretrace.records.plan_view import numbered as numbered
from tfretrace.records.plan_view import render_counts as render_counts

# Why a statement leaves traces with no checked fix (the session's ``open``): the plan cannot say
# how few traces the calls need. The first two also mean it predicts nothing for the function.
OPEN_REPLAY_DIFFERS = "replay-differs"  # replaying the calls does not give TensorFlow's count
OPEN_EVENTS_DROPPED = "events-dropped"  # the bounded history lost events
OPEN_NO_CHECKED_FIX = "no-checked-fix"  # a cause no fix kind addresses
OPEN_FRAMEWORK_CODE = "framework-code"  # the traced code is TensorFlow's: advice, never checked
OPEN_REASONS = (OPEN_REPLAY_DIFFERS, OPEN_EVENTS_DROPPED, OPEN_NO_CHECKED_FIX, OPEN_FRAMEWORK_CODE)
UNPREDICTED = frozenset({OPEN_REPLAY_DIFFERS, OPEN_EVENTS_DROPPED})

# What an applied step changes in the program's results besides its trace count (the session's
# ``changes``): it skips examples, computes in another dtype, draws other random numbers (one
# random stream where each trace had its own), gives a SavedModel a ``serving_default``
# signature it did not have (an input_signature on a function tf.saved_model.save writes), or
# generalizes the graph (a dimension left open, a Python value made a tensor), so that
# floating-point results may differ in their last digits: the graph no longer folds the Python
# value as a constant (Python computed it in double precision) and runs shape-generic kernels
# where each shape had its own (another order of summation, no fusion that needs static shapes).
# One value per step: the first of these that applies, in this order of precedence.
CHANGES = (CHANGES_EXAMPLES, CHANGES_DTYPE, CHANGES_RANDOM, CHANGES_SAVED_SIGNATURE, CHANGES_FLOAT_DIGITS)

# The kinds (fix.kinds) load at first use, not with this module: the report renders plan steps,
# and a run with nothing to plan never needs the kinds (most of tfretrace's start-up otherwise).


@functools.cache
def _generalizing() -> frozenset[str]:
    """Kinds whose traces are generalized, as each kind declares it (fix.core.kind.Kind.generalizes)."""
    from tfretrace.fix.kinds import REGISTRY

    return frozenset(kind.name for kind in REGISTRY if kind.generalizes)


def generalizes(kind: str, cause: str) -> bool:
    """Whether a step of ``kind`` for ``cause`` generalizes the graph (its ``changes``: CHANGES_FLOAT_DIGITS).

    A tf.Variable passed as a tensor (``variable-spec-changed``) is read as it was: nothing is generalized.
    """
    return kind in _generalizing() and cause != "variable-spec-changed"


@dataclass(frozen=True)
class PlanStep:
    """One step of a fix plan: a fix for one root cause and what it is predicted to leave.

    ``traces_before``/``traces_after`` count the traces of the calls this run made, before and
    after this step (the steps before it applied); ``verified`` is the count measured after
    applying the edits, or None. A ``statement`` step (kind) changes nothing and says why.
    ``by`` says who makes the step: ``tfretrace`` (its edits are what ``tfretrace fix --apply``
    writes) or ``hand``; None for a statement.
    """

    cause: str
    kind: str
    summary: str
    code: str | None
    edits: tuple[Replacement, ...]
    traces_before: int
    traces_after: int
    seconds_saved: float
    verified: int | None = None
    final: bool = False
    # XLA steps (kind xla-*): compiles of the recorded calls before and after; traces unchanged.
    compiles_before: int | None = None
    compiles_after: int | None = None
    # Why dimensions of an applied input_signature stay pinned (or open though constant).
    pinned: str | None = None
    # A statement that a value stays a Python value: the body's uses that need it (``int(i)``, ...).
    python_use: str | None = None
    # A statement leaving traces with no checked fix: one of OPEN_REASONS (None on every other step).
    open: str | None = None
    # What the step changes in the results besides the trace count: one of CHANGES, or None.
    changes: str | None = None
    # ``safe``, ``unsafe`` or ``advice`` (declared per kind in fix.kinds); None on a statement. ``fix --apply`` writes
    # only safe steps; ``--unsafe-fixes`` adds the unsafe ones, printing each ``unsafe_reason``.
    safety: str | None = None
    unsafe_reason: str | None = None
    # "tensorflow": the generalized signature (or, for a tensor-argument step, the Python value as a
    # tensor of its dtype) was traced by TensorFlow with the run's outputs.
    checked: str | None = None
    # How many inputs TensorFlow ran a recorded trace and the step's trace on to the same results,
    # where their graphs differ (issue 38: an int index, a folded constant); None where none ran.
    checked_inputs: int | None = None
    # An unsafe step of a kind TensorFlow can check (fix.kinds: probed or value-checked) whose
    # question was never put to it: the run asked TensorFlow nothing (a plain run), or found no
    # live function to ask. Asked, it may be safe: the report says "unchecked", not why it is unsafe.
    unasked: bool = False
    # Left by hand because TensorFlow raised tracing it as written (the edited program would fail there):
    # what TensorFlow said.
    refused: str | None = None

    @property
    def by(self) -> str | None:
        """``tfretrace`` when ``fix --apply`` makes the step (its edits, or another function's), ``hand`` otherwise."""
        if self.kind == "statement":
            return None
        return BY_TOOL if self.edits or self.kind in THROUGH_ANOTHER else BY_HAND

    @property
    def tier(self) -> int | None:
        """0: ``fix --apply`` makes it; 1: only with ``--unsafe-fixes``; 2: by hand; None for a statement."""
        if self.by is None:
            return None
        if self.by == BY_HAND:
            return 2
        return 0 if self.safety == SAFE else 1

    def to_dict(self) -> dict[str, Any]:
        """JSON form (schema 1, additive)."""
        out = self._fields()
        if self.by is not None:
            out["by"] = self.by
        if self.pinned is not None:
            out["pinned"] = self.pinned
        if self.python_use is not None:
            out["python_use"] = self.python_use
        if self.open is not None:
            out["open"] = self.open
        if self.changes is not None:
            out["changes"] = self.changes
        if self.safety is not None:
            out["safety"] = self.safety
        if self.unsafe_reason is not None:
            out["unsafe_reason"] = self.unsafe_reason
        if self.checked is not None:
            out["checked"] = self.checked
        if self.checked_inputs is not None:
            out["checked_inputs"] = self.checked_inputs
        if self.unasked:
            out["unasked"] = True
        if self.refused is not None:
            out["refused"] = self.refused
        if self.compiles_before is not None:
            out["compiles_before"] = self.compiles_before
            out["compiles_after"] = self.compiles_after
        return out

    def _fields(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "kind": self.kind,
            "summary": self.summary,
            "code": self.code,
            "edits": [_edit_dict(e) for e in self.edits],
            "traces_before": self.traces_before,
            "traces_after": self.traces_after,
            "seconds_saved": round(self.seconds_saved, 6),
            "verified": self.verified,
            "final": self.final,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanStep:
        """Inverse of :meth:`to_dict` (``by`` follows from the edits: a saved ``by`` cannot contradict them)."""
        edits = tuple(
            Replacement(Span(e["path"], e["line"], e["col"], e["end_line"], e["end_col"]), e["text"])
            for e in data.get("edits", [])
        )
        return cls(
            cause=str(data["cause"]),
            kind=str(data.get("kind", "")),
            summary=str(data["summary"]),
            code=data.get("code"),
            edits=edits,
            traces_before=int(data["traces_before"]),
            traces_after=int(data["traces_after"]),
            seconds_saved=float(data.get("seconds_saved", 0.0)),
            verified=data.get("verified"),
            final=bool(data.get("final", False)),
            compiles_before=None if data.get("compiles_before") is None else int(data["compiles_before"]),
            compiles_after=None if data.get("compiles_after") is None else int(data["compiles_after"]),
            pinned=None if data.get("pinned") is None else str(data["pinned"]),
            python_use=None if data.get("python_use") is None else str(data["python_use"]),
            open=data.get("open") if data.get("open") in OPEN_REASONS else None,
            changes=data.get("changes") if data.get("changes") in CHANGES else None,
            checked_inputs=int(data["checked_inputs"]) if isinstance(data.get("checked_inputs"), int) else None,
            unasked=data.get("unasked") is True and data.get("safety") == UNSAFE,
            refused=None if data.get("refused") is None else str(data["refused"]),
            **_safety(data),
        )


def _safety(data: dict[str, Any]) -> dict[str, Any]:
    """A saved step's class, never safer than its kind allows (a session file is data from elsewhere).

    A step with edits saved before steps had a class, or with a class no kind may have, is unsafe.
    """
    checked = TF_CHECKED if data.get("checked") == TF_CHECKED else None
    if data.get("kind") == "statement":
        return {"safety": None, "unsafe_reason": None, "checked": None}
    edits = bool(data.get("edits")) or data.get("kind") in THROUGH_ANOTHER
    if not edits:
        return {"safety": ADVICE, "unsafe_reason": None, "checked": checked}
    saved, reason = data.get("safety"), data.get("unsafe_reason")
    from tfretrace.fix.kinds import kind_floor

    floor = kind_floor(str(data.get("kind", "")), checked)
    if saved == SAFE and floor is None:
        return {"safety": SAFE, "unsafe_reason": None, "checked": checked}
    if saved not in SAFETIES or saved == ADVICE:
        floor = floor or "the session does not say this edit is safe (recorded before tfretrace classed its edits)"
    if saved == UNSAFE and isinstance(reason, str) and reason:
        return {"safety": UNSAFE, "unsafe_reason": reason, "checked": checked}  # the recorded reason
    text = floor if floor is not None else "unsafe as recorded"
    return {"safety": UNSAFE, "unsafe_reason": text, "checked": checked}


def _edit_dict(edit: Replacement) -> dict[str, Any]:
    s = edit.span
    return {
        "path": s.path,
        "line": s.line,
        "col": s.col,
        "end_line": s.end_line,
        "end_col": s.end_col,
        "text": edit.text,
    }


def fix_counts(plan: Sequence[dict[str, Any]]) -> tuple[int | None, int | None]:
    """A saved plan's two predictions: after ``fix --apply``, and after ``--apply --unsafe-fixes``."""
    steps = [PlanStep.from_dict(dict(s)) for s in plan]
    return applied_count(steps), applied_count(steps, unsafe=True)


def plan_steps(report: Any) -> list[PlanStep]:
    """The function's saved plan as records; a malformed step (a foreign or hostile file) is left out.

    Here, beside the record, so that the renderers read plans without loading the planner.
    """
    steps = []
    for data in report.plan:
        try:
            steps.append(PlanStep.from_dict(data))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return steps


def checked_plans(session: Session) -> Session:
    """A loaded session whose steps claim no more safety than their kinds allow (a session file is data from elsewhere).

    The renderers read plans as saved (records.plan_view): a command that renders a file it did
    not make passes it here first, so a step no checked kind made safe is never shown as safe.
    """
    functions = tuple(
        replace(report, plan=tuple(step.to_dict() for step in plan_steps(report))) if report.plan else report
        for report in session.functions
    )
    return replace(session, functions=functions)
