"""The linter's records: one finding, one skipped file, and the report of a whole run."""

from __future__ import annotations

from dataclasses import dataclass, field

# How sure a finding is that its callee is what the rule is about: "confirmed" when the file
# defines or imports it as a tf.function or a Keras model, "likely" when only its name says so.
CONFIRMED = "confirmed"
LIKELY = "likely"


@dataclass(frozen=True)
class Observed:
    """What a recorded session saw at a finding's line: its retraces and their own trace time."""

    retraces: int
    seconds: float
    functions: tuple[str, ...] = ()

    def line(self) -> str:
        """``confirmed: 7 retraces, 0.8 s``."""
        return f"confirmed: {self.retraces} retrace{'s' if self.retraces != 1 else ''}, {self.seconds:.1f} s"


@dataclass(frozen=True)
class Finding:
    """One rule violation; ``line`` is 1-based, ``column`` a 0-based offset in characters.

    ``ast`` counts columns in UTF-8 bytes; editors, SARIF viewers and people count characters.
    ``path`` is as the file system gave it (undecodable bytes as surrogates); formats escape it.
    """

    path: str
    line: int
    column: int
    code: str
    message: str
    # For a notebook: the code cell (1-based, code cells only) and ``line`` counts within it.
    cell: int | None = None
    # Stable across edits elsewhere in the file: a hash of the code and the finding's source line,
    # with ``:N`` counting equal lines (SARIF partialFingerprints, code scanning's alert tracking).
    fingerprint: str = ""
    confidence: str = CONFIRMED
    # Set by `lint --session`: the retraces a recorded run saw at this line (None: none seen).
    observed: Observed | None = None

    @property
    def where(self) -> str:
        """``line`` or ``cell N:line`` for people."""
        return f"cell {self.cell}:{self.line}" if self.cell is not None else str(self.line)


@dataclass(frozen=True)
class Skipped:
    """A file that could not be linted (syntax error, binary, undecodable, too large).

    ``error`` marks a file Python itself could not run (syntax error, undecodable, unreadable):
    it fails the run like a finding. Binary, huge and non-regular files are only skipped.
    """

    path: str
    reason: str
    error: bool = False


@dataclass
class RetraceSite:
    """The retraces a session recorded at one source line (a call site or a function's ``def``)."""

    path: str  # as recorded (relative to the session's root, or absolute)
    line: int
    retraces: int = 0
    seconds: float = 0.0
    functions: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)

    def observed(self) -> Observed:
        """The mark a finding at this line gets."""
        return Observed(self.retraces, round(self.seconds, 6), tuple(self.functions))

    def to_dict(self) -> dict[str, object]:
        """JSON form of an unpredicted site."""
        return {
            "path": self.path,
            "line": self.line,
            "retraces": self.retraces,
            "seconds": round(self.seconds, 6),
            "functions": list(self.functions),
            "causes": list(self.causes),
        }


@dataclass
class Report:
    """Everything one lint run found, in path and line order once ``sort`` has run."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    # The folder SARIF URIs are relative to (%SRCROOT%): the config's or the repository's root.
    root: str | None = None
    # With `lint --session`: the session file, and its retraces in the linted files at lines no
    # finding names (what the rules missed).
    session: str | None = None
    unpredicted: list[RetraceSite] = field(default_factory=list)
    # Why no finding could be marked (the session's files are not the linted ones), else None.
    session_note: str | None = None

    def sort(self) -> None:
        """Order findings by path, line, column and code so output is stable."""
        self.findings.sort(key=lambda f: (f.path, f.cell or 0, f.line, f.column, f.code))
        self.skipped.sort(key=lambda s: s.path)
