"""The lint findings of a run's files as the analysis stage saw them, kept in the session for the HTML report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfretrace._util import checked as C


@dataclass(frozen=True)
class Finding:
    """One lint finding: where, the rule's code and cause slug, and what the run saw of it (None: nothing)."""

    where: str
    code: str
    slug: str
    message: str
    likely: bool
    observed: str | None


@dataclass(frozen=True)
class Unpredicted:
    """A call site that retraced where no rule found anything."""

    where: str
    functions: str
    retraces: int
    seconds: float
    causes: str


@dataclass(frozen=True)
class LintPanel:
    """What ``tfretrace lint --session`` says of the files the run's functions and calls are in."""

    files: int
    findings: tuple[Finding, ...]
    unpredicted: tuple[Unpredicted, ...]

    @property
    def confirmed(self) -> int:
        """Findings the run's retraces confirmed."""
        return sum(f.observed is not None for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the session's ``lint``)."""
        return {
            "files": self.files,
            "findings": [
                {"where": f.where, "code": f.code, "slug": f.slug, "message": f.message, "likely": f.likely,
                 "observed": f.observed}
                for f in self.findings
            ],
            "unpredicted": [
                {"where": u.where, "functions": u.functions, "retraces": u.retraces,
                 "seconds": round(u.seconds, 6), "causes": u.causes}
                for u in self.unpredicted
            ],
        }

    @classmethod
    def from_dict(cls, value: Any, where: str = "lint") -> LintPanel:
        """Read and check a saved panel; FieldError on anything malformed."""
        data = C.mapping(value, where)
        return cls(
            files=C.count(data.get("files", 0), f"{where}.files"),
            findings=C.each(data.get("findings", []), f"{where}.findings", _finding),
            unpredicted=C.each(data.get("unpredicted", []), f"{where}.unpredicted", _unpredicted),
        )


def _finding(value: Any, where: str) -> Finding:
    data = C.mapping(value, where)
    return Finding(
        where=C.text(data.get("where"), f"{where}.where"),
        code=C.text(data.get("code"), f"{where}.code"),
        slug=C.text(data.get("slug"), f"{where}.slug"),
        message=C.text(data.get("message"), f"{where}.message"),
        likely=C.flag(data.get("likely", False), f"{where}.likely"),
        observed=C.optional_text(data.get("observed"), f"{where}.observed"),
    )


def _unpredicted(value: Any, where: str) -> Unpredicted:
    data = C.mapping(value, where)
    return Unpredicted(
        where=C.text(data.get("where"), f"{where}.where"),
        functions=C.text(data.get("functions"), f"{where}.functions"),
        retraces=C.count(data.get("retraces"), f"{where}.retraces"),
        seconds=C.seconds(data.get("seconds"), f"{where}.seconds"),
        causes=C.text(data.get("causes"), f"{where}.causes"),
    )
