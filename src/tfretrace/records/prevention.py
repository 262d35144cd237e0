"""The prevention report: per function, traces without and with the warm-up, as data, JSON and text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfretrace._util import checked as C

XLA_NOTE = (
    "jit_compile: XLA still compiles once per concrete shape from the general trace; "
    "no compile is prevented"
)


@dataclass(frozen=True)
class FunctionPrevention:
    """One profiled function met in this run.

    ``traces_without`` replays this run's calls through TensorFlow's rules with no warm-up;
    ``traces_with`` is TensorFlow's own count (``experimental_get_tracing_count``), warm-ups
    included; ``traces_after_warmup`` the traces TensorFlow still made after them.
    """

    name: str
    display_name: str
    location: str
    objects: int
    warmups: int
    warmup_seconds: float
    traces_without: int
    traces_with: int
    traces_after_warmup: int
    calls_outside: int
    # (cause, recorded retraces, the fix plan's step for it) for causes a warm-up cannot prevent.
    unpreventable: tuple[tuple[str, int, str | None], ...] = ()
    failures: tuple[str, ...] = ()
    jit_compile: bool = False
    matched: str = "exact"
    # Signatures the fix planner's checks (or the rebuild) kept from warming, and why.
    not_warmed: tuple[str, ...] = ()
    # What the warm-up changes in the results besides the count, each ``code: detail``
    # (``random-stream: ...``: fewer traces draw other random numbers than a run without it).
    changes: tuple[str, ...] = ()
    # The function's code changed since the profile recorded it: not warmed.
    stale: bool = False
    # The fix plan of the program as written (prevention off): the traces ``fix --apply`` is
    # predicted to leave (None: not predicted), and the fewest traces the calls need.
    traces_fixed: int | None = None
    traces_minimum: int | None = None
    # That plan itself, put on the session's function record (not part of this row's JSON).
    plan_off: tuple[dict[str, Any], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def prevented(self) -> int:
        """Traces this run did not make thanks to the warm-up (negative: the warm-up cost more)."""
        return self.traces_without - self.traces_with

    def to_dict(self) -> dict[str, Any]:
        """JSON form (session schema 1, additive)."""
        return {
            "name": self.name,
            "display_name": self.display_name,
            "location": self.location,
            "objects": self.objects,
            "warmups": self.warmups,
            "warmup_seconds": round(self.warmup_seconds, 6),
            "traces_without": self.traces_without,
            "traces_with": self.traces_with,
            "traces_after_warmup": self.traces_after_warmup,
            "prevented": self.prevented,
            "calls_outside": self.calls_outside,
            "unpreventable": [
                {"cause": cause, "retraces": n, "fix": fix} for cause, n, fix in self.unpreventable
            ],
            "failures": list(self.failures),
            "jit_compile": self.jit_compile,
            "matched": self.matched,
            "not_warmed": list(self.not_warmed),
            "changes": list(self.changes),
            "stale": self.stale,
            "traces_fixed": self.traces_fixed,
            "traces_minimum": self.traces_minimum,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> FunctionPrevention:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        rows = C.items(data.get("unpreventable", []), f"{where}.unpreventable")
        unpreventable = []
        for i, row in enumerate(rows):
            row = C.mapping(row, f"{where}.unpreventable[{i}]")
            unpreventable.append((
                C.text(row.get("cause"), f"{where}.unpreventable[{i}].cause"),
                C.count(row.get("retraces"), f"{where}.unpreventable[{i}].retraces"),
                C.optional_text(row.get("fix"), f"{where}.unpreventable[{i}].fix"),
            ))
        return cls(
            name=C.text(data.get("name"), f"{where}.name"),
            display_name=C.text(data.get("display_name", data.get("name")), f"{where}.display_name"),
            location=C.text(data.get("location"), f"{where}.location"),
            objects=C.count(data.get("objects", 0), f"{where}.objects"),
            warmups=C.count(data.get("warmups", 0), f"{where}.warmups"),
            warmup_seconds=C.seconds(data.get("warmup_seconds", 0.0), f"{where}.warmup_seconds"),
            traces_without=C.count(data.get("traces_without"), f"{where}.traces_without"),
            traces_with=C.count(data.get("traces_with"), f"{where}.traces_with"),
            traces_after_warmup=C.count(data.get("traces_after_warmup", 0), f"{where}.traces_after_warmup"),
            calls_outside=C.count(data.get("calls_outside", 0), f"{where}.calls_outside"),
            unpreventable=tuple(unpreventable),
            failures=C.texts(data.get("failures", []), f"{where}.failures"),
            jit_compile=C.flag(data.get("jit_compile", False), f"{where}.jit_compile"),
            matched=C.text(data.get("matched", "exact"), f"{where}.matched"),
            not_warmed=C.texts(data.get("not_warmed", []), f"{where}.not_warmed"),
            changes=C.texts(data.get("changes", []), f"{where}.changes"),
            stale=C.flag(data.get("stale", False), f"{where}.stale"),
            traces_fixed=C.optional_count(data.get("traces_fixed"), f"{where}.traces_fixed"),
            traces_minimum=C.optional_count(data.get("traces_minimum"), f"{where}.traces_minimum"),
        )


@dataclass(frozen=True)
class PreventionReport:
    """Which profile a run used and what its warm-ups did, per function."""

    profile: str
    profile_tensorflow: str | None
    functions: tuple[FunctionPrevention, ...]
    notes: tuple[str, ...] = ()
    not_called: int = 0
    # Call signatures this run added to the profile file, and the file written (learning).
    learned: int = 0
    written: str | None = None

    @property
    def prevented(self) -> int:
        """Traces prevented over all functions."""
        return sum(f.prevented for f in self.functions)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the session's ``prevention`` field."""
        return {
            "profile": self.profile,
            "profile_tensorflow": self.profile_tensorflow,
            "functions": [f.to_dict() for f in self.functions],
            "notes": list(self.notes),
            "not_called": self.not_called,
            "prevented": self.prevented,
            "learned": self.learned,
            "written": self.written,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "prevention") -> PreventionReport:
        """Inverse of :meth:`to_dict`; raises FieldError on a wrong type or value."""
        data = C.mapping(data, where)
        return cls(
            profile=C.text(data.get("profile"), f"{where}.profile"),
            profile_tensorflow=C.optional_text(data.get("profile_tensorflow"), f"{where}.profile_tensorflow"),
            functions=C.each(data.get("functions", []), f"{where}.functions", FunctionPrevention.from_dict),
            notes=C.texts(data.get("notes", []), f"{where}.notes"),
            not_called=C.count(data.get("not_called", 0), f"{where}.not_called"),
            learned=C.count(data.get("learned", 0), f"{where}.learned"),
            written=C.optional_text(data.get("written"), f"{where}.written"),
        )


def render(report: PreventionReport) -> str:
    """The terminal section ``tfretrace run --prevent`` prints after the report."""
    lines = [f"Prevention (profile {report.profile}): {report.prevented} traces prevented"]
    for f in report.functions:
        # One truth per function, the four counts side by side: as written (TensorFlow's rules
        # replayed over this run's calls), with --prevent (TensorFlow's own count), with the fix
        # plan's edits applied (predicted, prevention off), and the fewest the calls need.
        fixed = "?" if f.traces_fixed is None else str(f.traces_fixed)
        least = "?" if f.traces_minimum is None else str(f.traces_minimum)
        lines.append(
            f"  {f.display_name} ({f.location}): traces as written {f.traces_without}, with --prevent "
            f"{f.traces_with}, with fix --apply {fixed}, minimum {least}"
        )
        lines.append(
            f"    {f.warmups} warm-up trace(s) ({f.warmup_seconds * 1000:.1f} ms), {f.traces_after_warmup} traced "
            f"after the warm-up, {f.calls_outside} call(s) outside the profile"
        )
        for cause, n, fix in f.unpreventable:
            advice = f"; fix plan: {fix}" if fix else f"; see its fix plan (tfretrace explain {cause})"
            lines.append(f"    {n} {cause} retrace(s) in this run a warm-up cannot prevent{advice}")
        for change in f.changes:
            lines.append(f"    changes the results: {change}")
        for why in f.not_warmed:
            lines.append(f"    {why}")
        for failure in f.failures:
            lines.append(f"    {failure}")
        if f.jit_compile:
            lines.append(f"    {XLA_NOTE}")
    if report.not_called:
        lines.append(f"  {report.not_called} profiled function(s) that retraced there were not traced in this run")
    if report.written is not None:
        lines.append(f"  profile widened: {report.learned} call signature(s) added to {report.written}")
    for note in report.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines) + "\n"
