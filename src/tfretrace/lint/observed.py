"""Lint findings against a recorded run: which findings the run saw retrace, which retraces none predicted."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tfretrace.lint.findings import Report, RetraceSite
from tfretrace.records import catalogue
from tfretrace.records.events import TraceEvent
from tfretrace.records.session import Session


def _split(location: str | None) -> tuple[str, int] | None:
    if not location:
        return None
    path, _, line = location.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else None


def _real(path: str, root: str | None) -> str:
    candidate = Path(path)
    if not candidate.is_absolute() and root:
        candidate = Path(root) / candidate
    return os.path.realpath(candidate)


# A session names a handful of files; the linted folders are searched for their copies up to this many files.
_MAX_SEARCHED = 5000


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _linted_files(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The real paths of the Python files under ``paths`` (a file, or a folder walked), at most _MAX_SEARCHED."""
    found: list[str] = []
    for given in paths:
        real = os.path.realpath(given)
        if os.path.isfile(real):
            found.append(real)
            continue
        for folder, dirs, files in os.walk(real):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
            if len(found) >= _MAX_SEARCHED:
                return found[:_MAX_SEARCHED]
    return found


def relocated(session: Session, paths: Iterable[str | os.PathLike[str]]) -> tuple[dict[str, str], list[str]]:
    """Session files not linted at their recorded place (elsewhere, or changed), mapped to a linted copy of their bytes.

    Also returns the session files found nowhere: neither at their place nor, by content, among the
    linted files. A session saved in another folder (a CI job, a colleague's run) still marks the
    findings of the same file linted here.
    """
    moved: dict[str, str] = {}
    missing: list[str] = []
    by_digest: dict[str, list[str]] | None = None
    roots = [os.path.realpath(p) for p in paths]
    for path, digest in session.sources:
        real = _real(path, session.root)
        if _under(real, roots) and _digest(real) == digest:
            continue  # linted where the run saw it
        if by_digest is None:
            by_digest = {}
            for linted in _linted_files(paths):
                found = _digest(linted)
                if found is not None:
                    by_digest.setdefault(found, []).append(linted)
        copies = by_digest.get(digest, [])
        # Several copies: the one of the same name, else none (a guess would mark the wrong file).
        named = [c for c in copies if os.path.basename(c) == os.path.basename(path)]
        chosen = copies if len(copies) == 1 else named if len(named) == 1 else []
        if chosen:
            moved[real] = chosen[0]
        else:
            missing.append(path)
    return moved, missing


def _retraces(
    session: Session, moved: dict[str, str] | None = None
) -> list[tuple[str, TraceEvent, list[tuple[str, int]], list[tuple[str, int]]]]:
    """(function, event, shown places, real places) per retrace: its call site, then its ``def``.

    A retrace counts at its call site (where a changing argument comes from) and at its
    function's definition (where a tf.function made per call or per iteration is created).
    """
    found = []
    for function in session.functions:
        name = function.display_name()
        defined = _split(function.location)
        for event in function.events:
            if not event.is_retrace:
                continue
            recorded = dict.fromkeys(p for p in (_split(event.call_site), defined) if p is not None)
            keys = [((moved or {}).get(real, real), line)
                    for real, line in ((_real(path, session.root), line) for path, line in recorded)]
            found.append((name, event, [(_shown(real), line) for real, line in keys], keys))
    return found


def _predicts(code: str) -> str | None:
    """The runtime cause a rule's finding predicts (the catalogue's ``cause``), None if unknown."""
    try:
        return catalogue.get(code).cause
    except KeyError:
        return None


def _add(sites: dict[Any, RetraceSite], key: Any, place: tuple[str, int],
         name: str, event: TraceEvent) -> None:
    site = sites.get(key)
    if site is None:
        site = sites[key] = RetraceSite(*place)
    site.retraces += 1
    site.seconds += event.seconds
    if name not in site.functions:
        site.functions.append(name)
    if event.cause not in site.causes:
        site.causes.append(event.cause)


def _shown(real: str) -> str:
    """A path for people: relative to the working folder when under it."""
    rel = os.path.relpath(real)
    return real if rel == ".." or rel.startswith(".." + os.sep) else rel


def _under(real: str, roots: Iterable[str]) -> bool:
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def mark(report: Report, session: Session, paths: Iterable[str | os.PathLike[str]]) -> list[RetraceSite]:
    """Mark the report's findings the session saw retrace; return the retraces no finding names.

    A retrace is predicted by a finding of its cause at its call site or at its function's ``def``. Only
    retraces in the linted ``paths`` can be missed by the linter; a notebook's findings count
    lines within cells, which a run's call sites do not, so they are never marked.
    """
    paths = list(paths)  # read twice: for copies of the session's files, and for what the rules missed
    moved, missing = relocated(session, paths)
    retraces = _retraces(session, moved)
    roots = [os.path.realpath(p) for p in paths]
    if not retraces:
        # A prevented run, or one that never retraced: nothing to confirm a finding with.
        report.session_note = ("the session recorded no retrace (a run with --prevent records those it "
                               "prevented as none)")
    elif not any(_under(key[0], roots) for _n, _e, _p, keys in retraces for key in keys):
        # Nothing the run retraced is in the linted files: say why, or every finding reads as unseen.
        where = ", ".join(missing[:3]) if missing else "none of the linted paths"
        report.session_note = (
            f"no retrace of the session is in the linted files (its files: {where}; saved in "
            f"{session.root or 'an unknown folder'}); a file is matched at its recorded place, else by content"
        )
    # A finding is confirmed only by retraces of the cause its rule predicts (a python-value
    # finding for `lr` is not confirmed by the shape retraces of another argument at its line).
    sites: dict[tuple[tuple[str, int], str | None], RetraceSite] = {}
    for name, event, places, keys in retraces:
        for place, key in zip(places, keys):
            _add(sites, (key, event.cause), place, name, event)
    flagged = {
        ((os.path.realpath(f.path), f.line), _predicts(f.code)) for f in report.findings if f.cell is None
    }
    report.findings = [
        replace(f, observed=sites[at].observed())
        if f.cell is None and (at := ((os.path.realpath(f.path), f.line), _predicts(f.code))) in sites
        else f
        for f in report.findings
    ]
    missed: dict[tuple[str, int], RetraceSite] = {}
    for name, event, places, keys in retraces:
        if not keys or any((key, event.cause) in flagged for key in keys) or not _under(keys[0][0], roots):
            continue
        _add(missed, keys[0], places[0], name, event)  # where it is called, else where defined
    return sorted(missed.values(), key=lambda s: (-s.retraces, s.path, s.line))
