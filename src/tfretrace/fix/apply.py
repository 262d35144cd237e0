"""Turn a saved session's plans into file changes: source hashes, diffs, all-or-nothing writes."""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfretrace._io import atomic_write_text
from tfretrace.events import FunctionReport
from tfretrace.fix.plan import plan_steps
from tfretrace.fix.source import Replacement, is_user_path, resolve
from tfretrace.session import Session


class FixError(Exception):
    """Why the plan's edits cannot be made: one line for the user, nothing written."""


@dataclass(frozen=True)
class FileChange:
    """One user file before and after the plan's mechanical edits."""

    path: str  # as the session records it
    disk: Path
    before: str
    after: str


@dataclass(frozen=True)
class Advice:
    """A plan step that cannot be made mechanically: done by hand, at a place."""

    function: str
    summary: str
    where: str


def digest(text: str) -> str:
    """The hash the session stores for a source file's text."""
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
            found.append((path, digest(disk.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError):
            continue  # gone or not text: nothing a fix could edit
    return tuple(found)


def _inside(path: Path, root: str | os.PathLike[str] | None) -> bool:
    """True when ``path`` (symbolic links resolved) lies under ``root`` (default: here)."""
    base = Path(root if root is not None else ".").resolve()
    try:
        path.resolve().relative_to(base)
    except ValueError:
        return False
    return True


def edits_by_file(session: Session) -> tuple[dict[str, list[Replacement]], list[Advice]]:
    """The mechanical edits of every plan, per file, and the steps that are advice.

    Steps are cumulative: a later step's edit of the same place (the final input_signature after a
    reduce_retracing on one decorator) replaces the earlier one.
    """
    files: dict[str, list[Replacement]] = {}
    advice: list[Advice] = []
    for report in session.functions:
        for step in plan_steps(report):
            if not step.edits:
                if step.kind != "statement" and step.traces_after < step.traces_before:
                    advice.append(Advice(report.display_name(), step.summary, report.location))
                continue
            for edit in step.edits:
                kept = files.setdefault(edit.span.path, [])
                kept[:] = [e for e in kept if not _overlaps(e, edit)]
                kept.append(edit)
    return files, advice


def _overlaps(a: Replacement, b: Replacement) -> bool:
    start_a, end_a = (a.span.line, a.span.col), (a.span.end_line, a.span.end_col)
    start_b, end_b = (b.span.line, b.span.col), (b.span.end_line, b.span.end_col)
    return start_a <= end_b and start_b <= end_a


def prepare(session: Session, root: str | os.PathLike[str] | None = None) -> tuple[list[FileChange], list[Advice]]:
    """Every file's new text, checked against the session's hashes; FixError before anything is written."""
    # libcst is imported only when files are really rewritten, not by every `tfretrace` start.
    from tfretrace.fix.rewrite import RewriteError, apply_replacements

    base = root if root is not None else session.root
    recorded = dict(session.sources)
    files, advice = edits_by_file(session)
    changes = []
    for path, edits in sorted(files.items()):
        if not is_user_path(path):
            raise FixError(f"{path}: an edit points outside the program (TensorFlow or Keras source); not applied")
        disk = resolve(path, base)
        if not _inside(disk, base):
            # A session is data from elsewhere: it must not steer a write outside the program's folder.
            raise FixError(f"{path}: outside the program's folder {base or '.'}; not applied (see --root)")
        try:
            before = disk.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FixError(f"{disk}: no such file (run from the recorded folder, or pass --root)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise FixError(f"{disk}: cannot read ({exc.__class__.__name__})") from None
        expected = recorded.get(path)
        if expected is None:
            raise FixError(f"{path}: the session has no hash of this file; record the run again with this tfretrace")
        if digest(before) != expected:
            raise FixError(f"{path}: changed since the session was recorded; record the run again")
        try:
            after = apply_replacements(before, edits, where=path)
        except RewriteError as exc:
            raise FixError(str(exc)) from None
        if after != before:
            changes.append(FileChange(path, disk, before, after))
    return changes, advice


def unified_diff(changes: Sequence[FileChange]) -> str:
    """The changes as one unified diff, paths as recorded (a/ and b/ prefixes, like git)."""
    parts: list[str] = []
    for change in changes:
        parts.extend(
            difflib.unified_diff(
                change.before.splitlines(keepends=True),
                change.after.splitlines(keepends=True),
                fromfile=f"a/{change.path}",
                tofile=f"b/{change.path}",
            )
        )
    return "".join(p if p.endswith("\n") else p + "\n\\ No newline at end of file\n" for p in parts)


def write_all(changes: Sequence[FileChange], base: Path | None = None) -> list[Path]:
    """Write every change or none: each file atomically, and the earlier ones restored if a later fails.

    ``base`` writes the files under another folder (a copy of the program) at their recorded paths.
    """
    targets = [(c, resolve(c.path, base) if base is not None else c.disk) for c in changes]
    for _change, target in targets:
        if not os.access(target, os.W_OK):
            raise FixError(f"{target}: not writable; nothing was changed")
    done: list[tuple[FileChange, Path]] = []
    try:
        for change, target in targets:
            atomic_write_text(target, change.after)
            done.append((change, target))
    except OSError as exc:
        for change, target in done:
            atomic_write_text(target, change.before)
        raise FixError(f"cannot write ({exc.__class__.__name__}: {exc}); nothing was changed") from None
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
