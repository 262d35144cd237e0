"""The linter's records: one finding, one skipped file, and the report of a whole run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finding:
    """One rule violation; ``line`` is 1-based and ``column`` 0-based, as in ``ast``."""

    path: str
    line: int
    column: int
    code: str
    message: str


@dataclass(frozen=True)
class Skipped:
    """A file that could not be linted (syntax error, binary, undecodable, too large)."""

    path: str
    reason: str


@dataclass
class Report:
    """Everything one lint run found, in path and line order once ``sort`` has run."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files: int = 0
    lines: int = 0

    def sort(self) -> None:
        """Order findings by path, line, column and code so output is stable."""
        self.findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
        self.skipped.sort(key=lambda s: s.path)
