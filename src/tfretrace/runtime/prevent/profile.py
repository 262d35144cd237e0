"""A profile for prevention: per function (by code identity), the calls seen, what to warm, what no warm-up prevents."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tfretrace.fix.core.predict import calls_of
from tfretrace.fix.core.rules import Signature, common_signature, covers
from tfretrace.fix.core.specs import is_top
from tfretrace.records.events import KerasInfo
from tfretrace.records.function_key import FunctionKey
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.matching import record_key
from tfretrace.records.session import Session, SessionFormatError

# The one cause a general trace prevents: the rest need an edit (the function's fix plan).
PREVENTABLE = frozenset({"shape-changed"})
# Distinct call signatures kept per tf.function of a profile entry.
_MAX_SIGNATURES = 512


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

    @classmethod
    def of(cls, params: tuple[str, ...], recorded: tuple[Signature, ...]) -> Group:
        """The group of these distinct signatures, its warm-up signatures folded from them."""
        return cls(params, recorded, families(list(recorded)))


@dataclass(frozen=True)
class Entry:
    """One function of the profile: who it is, the calls recorded for it, what cannot be prevented."""

    key: FunctionKey
    name: str
    display_name: str
    location: str
    keras: KerasInfo | None
    groups: tuple[Group, ...]
    # (cause, recorded retraces, the fix plan's step for it) for causes a warm-up does not prevent.
    unpreventable: tuple[tuple[str, int, str | None], ...]
    # Whether the function created variables at its first call in a recorded run.
    creates_variables: bool
    retraces: int
    # Traces tf.saved_model.save made of it in a recorded run (each cached signature again).
    saving_traces: int = 0

    @property
    def warmable(self) -> bool:
        """Whether some recorded family of calls varied in shape."""
        return any(g.warm for g in self.groups)

    @property
    def worth_watching(self) -> bool:
        """Whether a run has something to warm or to report for it."""
        return self.retraces > 0 or self.warmable

    def group_for(self, params: tuple[str, ...]) -> Group | None:
        """The calls recorded for a tf.function with these parameters."""
        for group in self.groups:
            if group.params == params:
                return group
        return None

    def advice(self, cause: str) -> str | None:
        """The fix plan's step for a cause no warm-up prevents (its summary), if the plan had one."""
        for known, _, fix in self.unpreventable:
            if known == cause:
                return fix
        return None

    def widened(self, other: Entry) -> tuple[Entry, int]:
        """This entry with ``other``'s calls added (never fewer), and how many signatures were new."""
        groups = list(self.groups)
        added = 0
        for group in other.groups:
            mine = next((i for i, g in enumerate(groups) if g.params == group.params), None)
            if mine is None:
                groups.append(group)
                added += len(group.recorded)
                continue
            have = groups[mine]
            # A call a warm-up signature already covers teaches nothing; past the bound the
            # profile stops growing (a Python value that changes every step is the fix plan's).
            room = max(0, _MAX_SIGNATURES - len(have.recorded))
            fresh = tuple(
                s for s in group.recorded if s not in have.recorded and not any(covers(w, s) for w in have.warm)
            )[:room]
            if fresh:
                groups[mine] = Group.of(group.params, groups[mine].recorded + fresh)
                added += len(fresh)
        causes = {cause: (n, fix) for cause, n, fix in self.unpreventable}
        for cause, n, fix in other.unpreventable:
            was_n, was_fix = causes.get(cause, (0, None))
            causes[cause] = (max(n, was_n), was_fix or fix)
        entry = replace(
            self,
            groups=tuple(groups),
            unpreventable=tuple((c, n, fix) for c, (n, fix) in sorted(causes.items())),
            creates_variables=self.creates_variables or other.creates_variables,
            retraces=max(self.retraces, other.retraces),
            saving_traces=max(self.saving_traces, other.saving_traces),
        )
        return entry, added


@dataclass(frozen=True)
class Profile:
    """The functions of one or more recorded runs, ready to match in a new run.

    ``learnable``: the file is a profile file (or did not exist yet), which a run may widen; a
    saved session read as a profile is never rewritten.
    """

    path: str
    entries: tuple[Entry, ...]
    tensorflow: str | None
    root: str | None
    learnable: bool = False
    runs: int = 1

    @classmethod
    def from_session(cls, session: Session, path: str) -> Profile:
        """Build the profile of a loaded session (a merged one holds a function once per worker: folded)."""
        return cls(path, (), session.tensorflow, session.root).widened(session)[0]

    def widened(self, session: Session) -> tuple[Profile, int]:
        """The profile with the calls ``session`` met added, and how many signatures were new.

        Only ever wider: a function's calls are added to its entry (same key), never removed. A
        function whose code changed (same module and name, another code hash) gets a new entry
        in place of the stale one: the old calls may not fit the new code.
        """
        entries = list(self.entries)
        added = 0
        for report in session.functions:
            new = entry_of(report)
            if not new.groups and not new.unpreventable:
                continue
            same = next((i for i, e in enumerate(entries) if e.key == new.key), None)
            if same is not None:
                entries[same], more = entries[same].widened(new)
                added += more
                continue
            stale = next((i for i, e in enumerate(entries) if _edited(e.key, new.key)), None)
            if stale is not None:
                del entries[stale]
            entries.append(new)
            added += sum(len(g.recorded) for g in new.groups)
        tensorflow = self.tensorflow or session.tensorflow
        return replace(self, entries=tuple(entries), tensorflow=tensorflow, root=self.root or session.root), added

    def merged(self, other: Profile) -> Profile:
        """This profile and ``other`` as one (several workers or runs): same functions widened, others added.

        Two entries of one module and name with different code both stay: a run warms the one
        whose code it has.
        """
        entries = list(self.entries)
        for entry in other.entries:
            same = next((i for i, e in enumerate(entries) if e.key == entry.key), None)
            if same is None:
                entries.append(entry)
            else:
                entries[same] = entries[same].widened(entry)[0]
        return replace(
            self, entries=tuple(entries), tensorflow=self.tensorflow or other.tensorflow,
            root=self.root or other.root, runs=self.runs + other.runs,
        )

    def version_note(self, tensorflow: str | None) -> str | None:
        """One note when the profile was recorded on another TensorFlow than this run's."""
        if self.tensorflow is None or tensorflow is None or self.tensorflow == tensorflow:
            return None
        return (
            f"profile recorded on TensorFlow {self.tensorflow}, this run uses {tensorflow}: "
            "its signatures are used where their types still apply"
        )


def _edited(old: FunctionKey, new: FunctionKey) -> bool:
    return (old.module, old.qualname) == (new.module, new.qualname) and old.code_hash != new.code_hash


def entry_of(report: FunctionReport) -> Entry:
    """What prevention can do for one recorded function (its warm-up traces are not calls)."""
    calls = [e for e in report.events if not e.warmup]
    plain = replace(report, events=tuple(calls))
    by_params: dict[tuple[str, ...], list[Signature]] = {}
    for call in calls_of(plain).calls:
        params = tuple(leaf.path for leaf in call.signature if is_top(leaf.path))
        known = by_params.setdefault(params, [])
        if call.signature not in known:
            known.append(call.signature)
    groups = tuple(Group.of(params, tuple(sigs[:_MAX_SIGNATURES])) for params, sigs in by_params.items())
    counts: dict[str, int] = {}
    for event in calls:
        if event.is_retrace and event.cause not in PREVENTABLE:
            counts[event.cause] = counts.get(event.cause, 0) + 1
    unpreventable = tuple((cause, n, _advice(report, cause)) for cause, n in sorted(counts.items()))
    return Entry(
        key=record_key(report),
        name=report.name,
        display_name=report.display_name(),
        location=report.location,
        keras=report.keras,
        groups=groups,
        unpreventable=unpreventable,
        creates_variables=any(e.cause == "variable-creation" for e in calls),
        retraces=report.retraces,
        saving_traces=calls_of(report).saving_traces,
    )


def _advice(report: FunctionReport, cause: str) -> str | None:
    for step in report.plan:
        if step.get("cause") == cause and isinstance(step.get("summary"), str):
            return str(step["summary"])
    return None


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


__all__ = ["PREVENTABLE", "Entry", "Group", "Profile", "SessionFormatError", "entry_of", "families"]
