"""Turn a saved session's plans into file changes: source hashes, diffs, all-or-nothing writes."""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfretrace._util.io import atomic_write_text
from tfretrace.fix.anchors import AnchorError, anchors_for, check_step
from tfretrace.fix.files import SourceError, read_source_file
from tfretrace.fix.files import digest as digest_bytes
from tfretrace.fix.files import lines as source_lines
from tfretrace.fix.plan import plan_steps
from tfretrace.fix.source import Replacement, SourceReader, Span, is_user_path, resolve
from tfretrace.fix.step import BY_HAND
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session


class FixError(Exception):
    """Why the plan's edits cannot be made: one line for the user, nothing written."""


@dataclass(frozen=True)
class FileChange:
    """One user file before and after the plan's mechanical edits."""

    path: str  # as the session records it
    disk: Path
    before: str
    after: str
    encoding: str = "utf-8"  # the file's own (a BOM or a coding cookie), kept when it is written


@dataclass(frozen=True)
class Advice:
    """A plan step that cannot be made mechanically: done by hand, at a place."""

    function: str
    summary: str
    where: str
    # An unsafe step (fix.safety): why it may change results; ``applied`` with --unsafe-fixes.
    unsafe_reason: str | None = None
    applied: bool = False


def digest(text: str) -> str:
    """The hash of a text as UTF-8 bytes (what the session stores for a UTF-8 file with LF endings)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_hashes(functions: Iterable[FunctionReport], root: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """sha256 of every user file a plan edits or a function is defined in, read now from disk."""
    paths: set[str] = set()
    for report in functions:
        paths.add(report.location.rpartition(":")[0])
        for step in report.plan:
            paths.update(str(e.get("path")) for e in step.get("edits") or () if isinstance(e, dict))
    found = []
    for path in sorted(p for p in paths if p and is_user_path(p)):
        disk = resolve(path, root)
        try:
            # The bytes: a file whose line endings or encoding changed is a changed file.
            found.append((path, digest_bytes(read_source_file(disk).data)))
        except (OSError, ValueError):
            continue  # gone, not a regular file or not text: nothing a fix could edit
    return tuple(found)


def _inside(path: Path, root: str | os.PathLike[str] | None) -> bool:
    """True when ``path`` (symbolic links resolved) lies under ``root`` (default: here)."""
    base = Path(root if root is not None else ".").resolve()
    try:
        path.resolve().relative_to(base)
    except ValueError:
        return False
    return True


# Kinds whose edits are at the call sites: a recorded site none of them reaches is left to the user.
_CALL_SITE_KINDS = frozenset({"tensor-argument", "cast-dtype"})


def edits_by_file(
    session: Session, reader: SourceReader | None = None, *, unsafe: bool = False
) -> tuple[dict[str, list[Replacement]], list[Advice]]:
    """The mechanical edits of every plan, per file, and the steps (or call sites) left to the user.

    Only safe steps are edited unless ``unsafe`` (``--unsafe-fixes``); each unsafe step is listed
    with its reason, as applied or not. Steps are cumulative: a later step's edit of the same
    place (the final input_signature after a reduce_retracing on one decorator) replaces the
    earlier one. A call-site step that reaches only
    some of the recorded call sites lists each of the others as advice.
    """
    reader = reader or SourceReader()
    files: dict[str, list[tuple[int, Replacement]]] = {}
    advice: list[Advice] = []
    for owner, report in enumerate(session.functions):
        for step in plan_steps(report):
            if not step.edits:
                if step.by == BY_HAND and step.traces_after < step.traces_before:
                    advice.append(Advice(report.display_name(), step.summary, report.location))
                continue
            if step.tier == 1:
                advice.append(Advice(report.display_name(), step.summary, report.location,
                                     step.unsafe_reason or "unsafe", unsafe))
                if not unsafe:
                    continue
            if _clashes(files, owner, step.edits):
                # Another function's edit is at the same place: made alone, this step could
                # undo half of that one's move. Left to the user, said as such.
                advice.append(Advice(report.display_name(), step.summary + " (not applied: another function's "
                                     "edit is at the same place)", report.location))
                continue
            if step.kind in _CALL_SITE_KINDS:
                advice.extend(
                    Advice(report.display_name(), step.summary, site)
                    for site in _sites_not_reached(report, step.edits, reader)
                )
            for edit in step.edits:
                kept = files.setdefault(edit.span.path, [])
                joined = [(o, e) for o, e in kept if o != owner and _same_insertion(e, edit)]
                kept[:] = [(o, e) for o, e in kept if not _overlaps(e, edit)]
                # Two functions' statements moved before one loop: both are written there.
                text = "".join(e.text for _o, e in joined) + edit.text
                kept.append((joined[0][0] if joined else owner, Replacement(edit.span, text)))
    return {path: [e for _o, e in kept] for path, kept in files.items()}, advice


def _same_insertion(a: Replacement, b: Replacement) -> bool:
    # Whole lines inserted at one point (statements moved before the same loop).
    empty = (a.span.line, a.span.col) == (a.span.end_line, a.span.end_col)
    return a.span == b.span and empty and a.text.endswith("\n") and b.text.endswith("\n")


def _clashes(files: dict[str, list[tuple[int, Replacement]]], owner: int, edits: Sequence[Replacement]) -> bool:
    """Whether an edit overlaps another function's edit, other than lines inserted at the same point."""
    return any(
        o != owner and _overlaps(e, edit) and not _same_insertion(e, edit)
        for edit in edits for o, e in files.get(edit.span.path, [])
    )


def _sites_not_reached(report: FunctionReport, edits: Sequence[Replacement], reader: SourceReader) -> list[str]:
    """Recorded user call sites where no edit lies inside a call of the function there."""
    anchors = anchors_for(report, reader)
    params = anchors.definition.params if anchors.definition is not None else ()
    sites = dict.fromkeys(
        e.call_site for e in report.events if e.call_site and is_user_path(e.call_site.rpartition(":")[0])
    )
    out = []
    for site in sites:
        path, _, line = site.rpartition(":")
        spans = [c.span for c in reader.calls_at(site, anchors.names, params)]
        if not spans and line.isdigit():
            spans = [Span(path, int(line), 0, int(line), 1 << 30)]
        if not any(_within(e.span, s) for e in edits for s in spans):
            out.append(site)
    return out


def _within(inner: Span, outer: Span) -> bool:
    return inner.path == outer.path and (outer.line, outer.col) <= (inner.line, inner.col) and (
        inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col)


def _overlaps(a: Replacement, b: Replacement) -> bool:
    start_a, end_a = (a.span.line, a.span.col), (a.span.end_line, a.span.end_col)
    start_b, end_b = (b.span.line, b.span.col), (b.span.end_line, b.span.end_col)
    return start_a <= end_b and start_b <= end_a


def prepare(
    session: Session, root: str | os.PathLike[str] | None = None, *, unsafe: bool = False
) -> tuple[list[FileChange], list[Advice]]:
    """Every file's new text, checked against the session's hashes; FixError before anything is written.

    ``unsafe``: the unsafe steps' edits too (``--unsafe-fixes``); otherwise only the safe ones.

    ``root`` (default: the working directory) is where the program is: the session's own ``root``
    is data from elsewhere and never decides where files are written.
    """
    # libcst is imported only when files are really rewritten, not by every `tfretrace` start.
    from tfretrace.fix.rewrite import RewriteError, adds_lines, apply_replacements, check_text

    base = Path(root if root is not None else ".")
    recorded = dict(session.sources)
    files, advice = edits_by_file(session, SourceReader(base), unsafe=unsafe)
    sources = {}
    for path, edits in sorted(files.items()):
        if not is_user_path(path):
            raise FixError(f"{path}: an edit points outside the program (TensorFlow or Keras source); not applied")
        disk = resolve(path, base)
        if not _inside(disk, base):
            # A session is data from elsewhere: it must not steer a write outside the program's folder.
            raise FixError(f"{path}: outside the program's folder {base}; not applied (see --root)")
        for edit in edits:
            try:
                check_text(edit.text, f"{path}:{edit.span.line}", lines=adds_lines(edit))
            except RewriteError as exc:
                raise FixError(str(exc)) from None
        try:
            source = read_source_file(disk)
        except FileNotFoundError:
            raise FixError(f"{disk}: no such file (run from the recorded folder, or pass --root)") from None
        except SourceError as exc:
            raise FixError(f"{disk}: {exc}; not applied") from None
        expected = recorded.get(path)
        if expected is None:
            raise FixError(f"{path}: the session has no hash of this file; record the run again with this tfretrace")
        if digest_bytes(source.data) != expected:
            raise FixError(f"{path}: changed since the session was recorded; record the run again")
        sources[path] = (disk, source)
    _check_anchors(session, SourceReader(base), unsafe)
    changes = []
    for path, edits in sorted(files.items()):
        disk, source = sources[path]
        try:
            after = apply_replacements(source.text, edits, where=path)
            source.encode(after)
        except (RewriteError, SourceError) as exc:
            raise FixError(f"{path}: {exc}" if isinstance(exc, SourceError) else str(exc)) from None
        if after != source.text:
            changes.append(FileChange(path, disk, source.text, after, source.encoding))
    return changes, advice


def _check_anchors(session: Session, reader: SourceReader, unsafe: bool) -> None:
    """FixError unless every edit that is made sits at an anchor of its step's kind (see fix.anchors)."""
    for report in session.functions:
        steps = [s for s in plan_steps(report) if s.edits and (unsafe or s.tier == 0)]
        if not steps:
            continue
        anchors = anchors_for(report, reader)
        for step in steps:
            try:
                check_step(step.kind, anchors, step.edits)
            except AnchorError as exc:
                raise FixError(str(exc)) from None


def unified_diff(changes: Sequence[FileChange]) -> str:
    """The changes as one unified diff, paths as recorded (a/ and b/ prefixes, like git)."""
    parts: list[str] = []
    for change in changes:
        parts.extend(
            difflib.unified_diff(
                source_lines(change.before),
                source_lines(change.after),
                fromfile=f"a/{change.path}",
                tofile=f"b/{change.path}",
            )
        )
    return "".join(p if p.endswith("\n") else p + "\n\\ No newline at end of file\n" for p in parts)


def write_all(changes: Sequence[FileChange], base: Path | None = None) -> list[Path]:
    """Write every change or none: each file atomically, and the earlier ones restored if a later fails.

    Any exception restores them, a KeyboardInterrupt between two writes included, and is then
    raised again (an OSError as FixError). ``base`` writes the files under another folder (a copy
    of the program) at their recorded paths, and only there: a path that leads out of ``base``
    through a symbolic link is refused.
    """
    targets = [(c, resolve(c.path, base) if base is not None else c.disk) for c in changes]
    for _change, target in targets:
        if base is not None and not _inside(target, base):
            raise FixError(f"{target}: leads out of the copy (a symbolic link); nothing was changed")
        if not os.access(target, os.W_OK):
            raise FixError(f"{target}: not writable; nothing was changed")
    done: list[tuple[FileChange, Path]] = []
    try:
        for change, target in targets:
            done.append((change, target))  # before the write: a write cut short is restored too
            atomic_write_text(target, change.after, encoding=change.encoding)
    except BaseException as exc:
        for change, target in reversed(done):
            atomic_write_text(target, change.before, encoding=change.encoding)
        if isinstance(exc, OSError):
            raise FixError(f"cannot write ({exc.__class__.__name__}: {exc}); nothing was changed") from None
        raise
    return [t for _c, t in targets]


def mark_verified(data: dict[str, Any], measured: dict[tuple[str, str, str | None], int]) -> dict[str, Any]:
    """The session JSON with each function's last edited plan step carrying the count measured after.

    ``measured`` is keyed like ``verify.row_key``: name, file, and the Keras method (None for none).
    """
    for function in data.get("functions", []):
        keras = function.get("keras")
        method = keras.get("method") if isinstance(keras, dict) else None
        key = (function.get("name"), function.get("location", "").rpartition(":")[0], method)
        if key not in measured:
            continue
        edited = [s for s in function.get("plan") or [] if s.get("edits")]
        if edited:
            edited[-1]["verified"] = measured[key]
    return data
