"""Turn a saved session's plans into file changes: source hashes, diffs, all-or-nothing writes."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from tfretrace._util.io import atomic_write_text
from tfretrace.fix.applying.anchors import AnchorError, anchors_for, check_step
from tfretrace.fix.core.files import SourceError, read_source_file
from tfretrace.fix.core.files import digest as digest_bytes
from tfretrace.fix.core.files import lines as source_lines
from tfretrace.fix.core.hashes import source_hashes as source_hashes  # re-exported: the session's `sources`
from tfretrace.fix.core.source import Replacement, SourceReader, Span, is_user_path, resolve
from tfretrace.fix.errors import FixError as FixError  # re-exported: callers import it from here
from tfretrace.fix.kinds import CALL_SITE_KINDS
from tfretrace.fix.planning.plan import plan_steps
from tfretrace.fix.planning.step import BY_HAND
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session


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
    # An unsafe step (fix.planning.safety_plan): why it may change results; ``applied`` with --unsafe-fixes.
    unsafe_reason: str | None = None
    applied: bool = False


def user_place(report: FunctionReport) -> str:
    """Where the user edits by hand: the function's own file, else its first call site in the
    user's code (a Keras function is defined in Keras: the user's ``model.predict`` line is
    the place), else where its Keras model was built."""
    if is_user_path(report.location.rpartition(":")[0]):
        return report.location
    for event in report.events:
        if event.call_site and is_user_path(event.call_site.rpartition(":")[0]):
            return event.call_site
    if report.keras is not None and report.keras.built_at:
        return report.keras.built_at
    return report.location


def digest(text: str) -> str:
    """The hash of a text as UTF-8 bytes (what the session stores for a UTF-8 file with LF endings)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _inside(path: Path, root: str | os.PathLike[str] | None) -> bool:
    """True when ``path`` (symbolic links resolved) lies under ``root`` (default: here)."""
    base = Path(root if root is not None else ".").resolve()
    try:
        path.resolve().relative_to(base)
    except ValueError:
        return False
    return True


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
    # The replacements of steps this run does not make (unsafe without --unsafe-fixes): another function's
    # safe step making the same one (one call line, two models) would make it for that function too.
    held = {edit: (owner, report.display_name()) for owner, report in enumerate(session.functions)
            for step in plan_steps(report) if step.tier == 1 and not unsafe
            for edit in step.edits if _replaces(edit)}
    for owner, report in enumerate(session.functions):
        for step in plan_steps(report):
            if not step.edits:
                if step.by == BY_HAND and step.traces_after < step.traces_before:
                    advice.append(Advice(report.display_name(), step.summary, user_place(report)))
                continue
            if step.tier == 1:
                advice.append(Advice(report.display_name(), step.summary, report.location,
                                     step.unsafe_reason or "unsafe", unsafe))
                if not unsafe:
                    continue
            other = next((held[e] for e in step.edits if e in held and held[e][0] != owner), None)
            if other is not None:
                advice.append(Advice(report.display_name(), step.summary + f" (not applied: {other[1]}'s step makes "
                                     "the same edit, and it is unsafe)", user_place(report)))
                continue
            # The same edit, already made for another function (two models predicting at one line).
            written = all(_written(files, edit) for edit in step.edits)
            if not written and _clashes(files, owner, step.edits):
                # Another function's edit is at the same place: made alone, this step could
                # undo half of that one's move. Left to the user, said as such.
                advice.append(Advice(report.display_name(), step.summary + " (not applied: another function's "
                                     "edit is at the same place)", user_place(report)))
                continue
            if step.kind in CALL_SITE_KINDS:  # a recorded site none of them reaches is left to the user
                advice.extend(
                    Advice(report.display_name(), step.summary, site)
                    for site in _sites_not_reached(report, step.edits, reader)
                )
            if written:
                continue
            for edit in step.edits:
                kept = files.setdefault(edit.span.path, [])
                joined = [(o, e) for o, e in kept if o != owner and _same_insertion(e, edit)]
                kept[:] = [(o, e) for o, e in kept if not _overlaps(e, edit)]
                # Two functions' statements moved before one loop: both are written there.
                texts = [e.text for _o, e in joined]
                # The same lines from two functions (keras-pad-rows' helper, for two models) are written once.
                text = "".join(texts) + ("" if edit.text in texts else edit.text)
                kept.append((joined[0][0] if joined else owner, Replacement(edit.span, text)))
    return {path: [e for _o, e in kept] for path, kept in files.items()}, advice


def _same_insertion(a: Replacement, b: Replacement) -> bool:
    # Whole lines inserted at one point (statements moved before the same loop).
    empty = (a.span.line, a.span.col) == (a.span.end_line, a.span.end_col)
    return a.span == b.span and empty and a.text.endswith("\n") and b.text.endswith("\n")


def _replaces(edit: Replacement) -> bool:
    """Whether the edit replaces code (an insertion at a point, such as a helper written once, does not)."""
    return (edit.span.line, edit.span.col) != (edit.span.end_line, edit.span.end_col)


def _written(files: dict[str, list[tuple[int, Replacement]]], edit: Replacement) -> bool:
    """Whether exactly this replacement (place and text) is already among the edits."""
    return any(e == edit for _o, e in files.get(edit.span.path, []))


def _clashes(files: dict[str, list[tuple[int, Replacement]]], owner: int, edits: Sequence[Replacement]) -> bool:
    """Whether an edit overlaps another function's edit, other than lines inserted at the same point."""
    return any(
        o != owner and _overlaps(e, edit) and not _same_insertion(e, edit) and e != edit
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
    from tfretrace.fix.applying.rewrite import RewriteError, adds_lines, apply_replacements, check_text

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
    """FixError unless every edit that is made sits at an anchor of its step's kind (see fix.applying.anchors)."""
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


def as_written(session: Session) -> Session:
    """The session with each step that has edits showing their texts as its code: what --apply writes.

    A step's ``code`` is the session's own text, free to say something else than its edits: a
    plan printed before an apply shows the edits themselves (removals show nothing; the diff has them).
    """
    functions = []
    for report in session.functions:
        plan = []
        for data in report.plan:
            edits = data.get("edits") if isinstance(data, dict) else None
            if edits and isinstance(edits, list):
                texts = [str(e.get("text") or "").rstrip("\n") for e in edits if isinstance(e, dict)]
                data = {**data, "code": "\n\n".join(t for t in texts if t.strip()) or None}
            plan.append(data)
        functions.append(replace(report, plan=tuple(plan)))
    return replace(session, functions=tuple(functions))


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
    raised again (an OSError as FixError). SIGTERM and SIGHUP (a CI cancel, a closed terminal)
    restore them too, then end the process with status 128 + the signal's number once the
    previous handlers are back. ``base`` writes the files under another folder (a copy
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
    with _signals_unwind() as restoring:
        try:
            for change, target in targets:
                done.append((change, target))  # before the write: a write cut short is restored too
                atomic_write_text(target, change.after, encoding=change.encoding)
        except BaseException as exc:
            restoring.set()  # a second signal must not cut the restore short
            for change, target in reversed(done):
                atomic_write_text(target, change.before, encoding=change.encoding)
            if isinstance(exc, OSError):
                raise FixError(f"cannot write ({exc.__class__.__name__}: {exc}); nothing was changed") from None
            raise
        restoring.set()  # every file written: a signal now is delivered once the handlers are back
    return [t for _c, t in targets]


class Signalled(SystemExit):
    """SIGTERM or SIGHUP while files are written: unwinds so that they are restored; the code is 128 + signum."""


@contextlib.contextmanager
def _signals_unwind() -> Iterator[threading.Event]:
    """SIGINT, SIGTERM and SIGHUP raise (once) instead of ending the process between two writes.

    The event it yields, once set, makes every later signal wait: the restore runs to its end.
    Handlers can only be set in the main thread; elsewhere the signals keep theirs.
    """
    restoring = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield restoring
        return

    caught: list[int] = []
    unwound = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal unwound
        caught.append(signum)
        if restoring.is_set():
            return
        restoring.set()
        unwound = True
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Signalled(128 + signum)

    wanted = [s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    # A signal ignored by the caller (nohup, a shell's background job) stays ignored.
    previous = {s: signal.getsignal(s) for s in wanted}
    for sig in wanted:
        if previous[sig] is not signal.SIG_IGN:
            signal.signal(sig, handler)
    try:
        yield restoring
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
    if caught and not unwound:
        # It came after the last write: the files stay written and the signal does what it did before.
        signal.raise_signal(caught[0])


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
