"""A profile for prevention: per recorded function, the general signatures to warm and what no warm-up prevents."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tfretrace.fix.predict import calls_of
from tfretrace.fix.rules import Signature, common_signature
from tfretrace.fix.specs import is_top
from tfretrace.records.events import KerasInfo
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session, SessionFormatError, load

# The one cause a general trace prevents: the rest need an edit (the function's fix plan).
PREVENTABLE = frozenset({"shape-changed"})


@dataclass(frozen=True)
class Group:
    """The recorded calls of one tf.function of a row (a Keras row holds two) and what to warm.

    ``warm``: one signature per family of calls that differ only in tensor shapes, with the
    dimensions that varied open and everything else as recorded (the fix plan's final-signature
    rule); only families whose shapes varied are warmed.
    """

    params: tuple[str, ...]
    recorded: tuple[Signature, ...]
    warm: tuple[Signature, ...]


@dataclass(frozen=True)
class Entry:
    """One function of the profile: where it is, what to warm, and what cannot be prevented."""

    report: FunctionReport
    groups: tuple[Group, ...]
    # (cause, retraces) of the recorded retraces a general trace does not prevent.
    unpreventable: tuple[tuple[str, int], ...]

    @property
    def name(self) -> str:
        """The recorded qualified name."""
        return self.report.name

    @property
    def keras(self) -> KerasInfo | None:
        """The Keras model and method the row belongs to, if any."""
        return self.report.keras

    @property
    def creates_variables(self) -> bool:
        """Whether the function created variables at its first call in the recorded run."""
        return any(e.cause == "variable-creation" for e in self.report.events)

    @property
    def saving_traces(self) -> int:
        """Traces tf.saved_model.save made of it in the recorded run (each cached signature again)."""
        return calls_of(self.report).saving_traces

    @property
    def warmable(self) -> bool:
        """Whether some recorded family of calls varied in shape."""
        return any(g.warm for g in self.groups)

    def group_for(self, params: tuple[str, ...]) -> Group | None:
        """The calls recorded for a tf.function with these parameters."""
        for group in self.groups:
            if group.params == params:
                return group
        return None

    def advice(self, cause: str) -> str | None:
        """The fix plan's step for a cause no warm-up prevents (its summary), if the plan has one."""
        for step in self.report.plan:
            if step.get("cause") == cause and isinstance(step.get("summary"), str):
                return str(step["summary"])
        return None


@dataclass(frozen=True)
class Profile:
    """The functions of one saved session (or several merged), ready to match in a new run."""

    path: str
    entries: tuple[Entry, ...]
    tensorflow: str | None
    root: str | None

    @classmethod
    def from_session(cls, session: Session, path: str) -> Profile:
        """Build the profile of a loaded session."""
        return cls(path, tuple(entry_of(f) for f in session.functions), session.tensorflow, session.root)

    def version_note(self, tensorflow: str | None) -> str | None:
        """One note when the profile was recorded on another TensorFlow than this run's."""
        if self.tensorflow is None or tensorflow is None or self.tensorflow == tensorflow:
            return None
        return (
            f"profile recorded on TensorFlow {self.tensorflow}, this run uses {tensorflow}: "
            "its signatures are used where their types still apply"
        )


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read a saved session as a profile; SessionFormatError (one line) on a bad file."""
    session = load(path)
    if not session.functions:
        raise SessionFormatError(f"{os.fspath(path)}: the session records no function to prevent retracing of")
    return Profile.from_session(session, os.fspath(path))


def entry_of(report: FunctionReport) -> Entry:
    """What prevention can do for one recorded function."""
    by_params: dict[tuple[str, ...], list[Signature]] = {}
    for call in calls_of(report).calls:
        params = tuple(leaf.path for leaf in call.signature if is_top(leaf.path))
        known = by_params.setdefault(params, [])
        if call.signature not in known:
            known.append(call.signature)
    groups = tuple(Group(params, tuple(sigs), families(sigs)) for params, sigs in by_params.items())
    counts: dict[str, int] = {}
    for event in report.events:
        if event.is_retrace and event.cause not in PREVENTABLE:
            counts[event.cause] = counts.get(event.cause, 0) + 1
    return Entry(report, groups, tuple(sorted(counts.items())))


def families(signatures: list[Signature]) -> tuple[Signature, ...]:
    """One general signature per family of signatures that differ only in shapes (two or more)."""
    folded: list[tuple[Signature, int]] = []
    for signature in signatures:
        for number, (general, size) in enumerate(folded):
            merged = common_signature(general, signature)
            if merged is not None:
                folded[number] = (merged, size + 1)
                break
        else:
            folded.append((signature, 1))
    return tuple(general for general, size in folded if size > 1)
