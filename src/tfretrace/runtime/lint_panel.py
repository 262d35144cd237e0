"""The analysis stage's lint of the source files a session names, each finding marked with what the run saw there."""

from __future__ import annotations

import os
from pathlib import Path

from tfretrace.lint.findings import CONFIRMED, Report
from tfretrace.lint.observed import mark
from tfretrace.lint.runner import lint_paths
from tfretrace.records import catalogue
from tfretrace.records.lint_panel import Finding, LintPanel, Unpredicted
from tfretrace.records.session import Session

# A report names a handful of user files; a session naming thousands is not linted whole.
MAX_FILES = 50
_FOREIGN = ("site-packages", "dist-packages")


def session_files(session: Session) -> list[Path]:
    """The user's Python files the session's functions and call sites point at, that exist here."""
    named: dict[str, None] = {}
    for function in session.functions:
        named[function.location] = None
        for event in function.events:
            if event.call_site:
                named[event.call_site] = None
    files: dict[Path, None] = {}
    for location in named:
        path = location.rpartition(":")[0]
        if not path.endswith(".py") or path.startswith("<") or any(p in path for p in _FOREIGN):
            continue
        candidate = Path(path)
        if not candidate.is_absolute() and session.root:
            candidate = Path(session.root) / candidate
        try:
            if candidate.is_file():
                files[candidate] = None
        except OSError:
            continue
    return list(files)[:MAX_FILES]


def lint_panel(session: Session) -> LintPanel | None:
    """The findings with their run marks, and retraces no rule predicted, for the session's ``lint``.

    None when the session names no file that can be read here.
    """
    files = session_files(session)
    if not files:
        return None
    root = Path(session.root) if session.root and os.path.isdir(session.root) else None
    try:
        report: Report = lint_paths(files, root=root, cache_dir=None, gitignore=False)
    except OSError:
        return None
    missed = mark(report, session, files)
    shown = root or Path.cwd()
    return LintPanel(
        files=len(files),
        findings=tuple(
            Finding(
                where=f"{_relative(f.path, shown)}:{f.where}",
                code=f.code,
                slug=catalogue.get(f.code).slug,
                message=f.message,
                likely=f.confidence != CONFIRMED,
                observed=None if f.observed is None else f.observed.line(),
            )
            for f in report.findings
        ),
        unpredicted=tuple(
            Unpredicted(
                where=f"{_relative(s.path, shown)}:{s.line}",
                functions=", ".join(s.functions),
                retraces=s.retraces,
                seconds=s.seconds,
                causes=", ".join(s.causes),
            )
            for s in missed
        ),
    )


def _relative(path: str, root: Path) -> str:
    try:
        return os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    except ValueError:  # another drive on Windows
        return path
