"""A saved fix-plan step as the renderers read it: its fields, who makes it, and a plan's headline counts.

The planner (tfretrace.fix) writes plans into the session; renderers read them here, so that a
report is drawn from the session alone without loading the planner and its 40 modules of edit
kinds. A step's safety class is checked against its kind where the plan is made or a saved
session is loaded for a command (fix.planning.step.PlanStep.from_dict), not here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

# Who makes a step (the session's ``by``): tfretrace's own edit, or a person.
BY_TOOL = "tfretrace"
BY_HAND = "hand"
SAFE = "safe"
# Kinds with no edits of their own that ``tfretrace fix --apply`` makes through another
# function's edits (fix.kinds.saved_signature: a restored function, by the saving function's signature).
THROUGH_ANOTHER = frozenset({"saved-signature"})


class Step(Protocol):
    """What the counting helpers read of a step (a StepView here, a PlanStep in the planner)."""

    @property
    def kind(self) -> str: ...
    @property
    def traces_before(self) -> int: ...
    @property
    def traces_after(self) -> int: ...
    @property
    def compiles_before(self) -> int | None: ...
    @property
    def by(self) -> str | None: ...
    @property
    def tier(self) -> int | None: ...


@dataclass(frozen=True)
class Place:
    """Where one of a step's edits lands: the file (relative to the run's root) and its first line."""

    path: str
    line: int


@dataclass(frozen=True)
class StepView:
    """One saved step's fields (fix.planning.step.PlanStep.to_dict), read without the planner."""

    cause: str
    kind: str
    summary: str
    code: str | None
    places: tuple[Place, ...]
    traces_before: int
    traces_after: int
    seconds_saved: float
    verified: int | None = None
    final: bool = False
    compiles_before: int | None = None
    compiles_after: int | None = None
    pinned: str | None = None
    python_use: str | None = None
    open: str | None = None
    changes: str | None = None
    safety: str | None = None
    unsafe_reason: str | None = None
    checked: str | None = None
    # Unsafe only for want of TensorFlow's answer (fix.planning.step.PlanStep.unasked).
    unasked: bool = False

    @property
    def edits(self) -> tuple[Place, ...]:
        """The places the step edits (empty for advice and statements)."""
        return self.places

    @property
    def by(self) -> str | None:
        """``tfretrace`` when ``fix --apply`` makes the step (its edits, or another function's), ``hand`` otherwise."""
        if self.kind == "statement":
            return None
        return BY_TOOL if self.places or self.kind in THROUGH_ANOTHER else BY_HAND

    @property
    def tier(self) -> int | None:
        """0: ``fix --apply`` makes it; 1: only with ``--unsafe-fixes``; 2: by hand; None for a statement."""
        if self.by is None:
            return None
        if self.by == BY_HAND:
            return 2
        return 0 if self.safety == SAFE else 1

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepView:
        """A step from its saved form; KeyError/TypeError/ValueError on a malformed one."""
        places = tuple(Place(str(e["path"]), int(e["line"])) for e in data.get("edits", []))
        return cls(
            cause=str(data["cause"]),
            kind=str(data.get("kind", "")),
            summary=str(data["summary"]),
            code=None if data.get("code") is None else str(data["code"]),
            places=places,
            traces_before=int(data["traces_before"]),
            traces_after=int(data["traces_after"]),
            seconds_saved=float(data.get("seconds_saved", 0.0)),
            verified=_optional_int(data.get("verified")),
            final=bool(data.get("final", False)),
            compiles_before=_optional_int(data.get("compiles_before")),
            compiles_after=_optional_int(data.get("compiles_after")),
            pinned=_optional_text(data.get("pinned")),
            python_use=_optional_text(data.get("python_use")),
            open=_optional_text(data.get("open")),
            changes=_optional_text(data.get("changes")),
            safety=None if data.get("kind") == "statement" else _optional_text(data.get("safety")),
            unsafe_reason=_optional_text(data.get("unsafe_reason")),
            checked=_optional_text(data.get("checked")),
            unasked=data.get("unasked") is True,
        )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def plan_steps(report: Any) -> list[StepView]:
    """The function's saved plan as views; a malformed step (a foreign or hostile file) is left out."""
    steps = []
    for data in report.plan:
        try:
            steps.append(StepView.from_dict(data))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return steps


S = TypeVar("S", bound=Step)


def numbered(steps: Sequence[S]) -> list[tuple[int, S]]:
    """Each step with its number: fix steps count 1, 2, ...; a note keeps the number before it."""
    out, number = [], 0
    for step in steps:
        number += step.kind != "statement"
        out.append((number, step))
    return out


def _changing(steps: Sequence[S]) -> list[tuple[int, S]]:
    return [
        (n, s) for n, s in numbered(steps) if s.compiles_before is None and s.traces_after < s.traces_before
    ]


def applied_count(steps: Sequence[Step], *, unsafe: bool = False) -> int | None:
    """Traces predicted once ``tfretrace fix --apply`` made this plan's edits (its safe ``tfretrace`` steps).

    ``unsafe``: with ``--unsafe-fixes`` (the unsafe steps with edits too). None when no step
    changes the count (then the plan predicts nothing to compare), or when the steps are not in
    the order safe, unsafe, by hand (a session saved before that order).
    """
    changing = _changing(steps)
    if not changing or not _ordered(changing):
        return None
    top = 1 if unsafe else 0
    made = [s for _n, s in changing if s.tier is not None and s.tier <= top]
    return made[-1].traces_after if made else changing[0][1].traces_before


def _ordered(changing: Sequence[tuple[int, Step]]) -> bool:
    # Plans record the safe steps, then the unsafe ones, then those by hand: each count assumes
    # only the steps before it.
    tiers = [s.tier if s.tier is not None else 2 for _n, s in changing]
    return tiers == sorted(tiers)


def render_counts(steps: Sequence[Step]) -> str:
    """``24 traces -> 3 with tfretrace fix --apply (-> 2 with --unsafe-fixes), -> 1 with step 3 by hand``.

    The unsafe part only when some step is unsafe, the hand part only when some step is by hand.
    """
    changing = _changing(steps)
    if not changing:
        return ""
    applied = applied_count(steps)
    if applied is None:
        return f"{changing[0][1].traces_before} traces -> " + " -> ".join(str(s.traces_after) for _n, s in changing)
    text = f"{changing[0][1].traces_before} traces -> {applied} with tfretrace fix --apply"
    if any(s.tier == 1 for _n, s in changing):
        text += f" (-> {applied_count(steps, unsafe=True)} with --unsafe-fixes)"
    hand = [(n, s) for n, s in changing if s.by != BY_TOOL]
    if hand:
        numbers = ", ".join(str(n) for n, _s in hand)
        text += f", -> {hand[-1][1].traces_after} with step{'s' if len(hand) > 1 else ''} {numbers} by hand"
    return text
