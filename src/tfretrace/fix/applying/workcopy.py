"""The copy of the user's program that ``fix --verify`` edits and runs: nothing in it leads back to the original.

The rule (docs/fix-plan.md, "What --verify copies"):

- what git ignores (every ``.gitignore`` and ``.git/info/exclude``) and environment, VCS and cache
  folders are left out;
- every other file of at most :data:`LARGE_BYTES` is copied;
- a larger file is cloned copy-on-write where the file system can (btrfs, XFS, APFS): a clone costs
  no space and a write to it never reaches the original; otherwise it is refused, unless the user
  names it (or a folder holding it) with ``--link-data``: then the copy holds a symbolic link to it,
  the user's statement that the program only reads it, and the verification checks afterwards
  that every linked file still has its size and modification time. A named folder is a real
  folder in the copy, each of its files a link: a file the program creates there stays in the
  copy; its original folders are checked too (a new or removed entry changes their time);
- a symbolic link is kept only when it stays inside the program's folder (made relative, so it
  points into the copy); one leading out of the folder is refused unless ``--link-data`` names it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tfretrace._util.gitignore import GitIgnore
from tfretrace.fix.errors import FixError

LARGE_BYTES = 32 * 1024 * 1024
# Folders a program copy does without: environments, VCS data and caches can be gigabytes.
SKIP = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", ".matrix", ".tfretrace_cache", ".ipynb_checkpoints",
})
_FICLONE = 0x40049409  # linux/fs.h: clone a whole file, copy-on-write


class CopyError(FixError, ValueError):
    """Why the program cannot be copied without copying too much or leaving a way to the original.

    A FixError: ``fix --verify`` and ``--also-run`` report it to the user as any other refusal.
    """


@dataclass
class CopyPlan:
    """What goes into the copy, per relative path, and what was left out."""

    copy: list[str] = field(default_factory=list)
    large: list[tuple[str, int]] = field(default_factory=list)  # cloned, or linked when named
    links: list[tuple[str, str]] = field(default_factory=list)  # (path, target relative to its folder)
    data: list[str] = field(default_factory=list)  # linked to the original (--link-data)
    ignored: int = 0

    @property
    def count(self) -> int:
        """Entries the copy will hold."""
        return len(self.copy) + len(self.large) + len(self.links) + len(self.data)


def _named(rel: str, link_data: Sequence[str]) -> bool:
    return any(rel == n or rel.startswith(n.rstrip("/") + "/") for n in link_data)


def plan_copy(root: Path, link_data: Sequence[str] = (), keep: Sequence[str] = ()) -> CopyPlan:
    """Walk ``root`` by the rule above; CopyError for a file that is neither small, clonable nor named.

    ``keep``: relative paths copied even where git ignores them (the files the edits change and
    the program itself: a copy without them could not be edited or run).
    """
    root = root.resolve()
    kept_files = {Path(os.path.normpath(k)).as_posix() for k in keep}
    named = [_inside_root(n, root) for n in link_data]
    ignore = GitIgnore()
    plan = CopyPlan()
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        kept = []
        for d in sorted(dirs):
            rel = (base / d).relative_to(root).as_posix()
            if rel in named:
                plan.data.append(rel)  # a named folder: one link for all of it
            elif d in SKIP or d.endswith(".egg-info"):
                continue
            elif (base / d).is_symlink():
                files.append(d)  # a link to a folder: judged like a link to a file
            elif ignore.ignored(base / d, is_dir=True) and not any(k.startswith(rel + "/") for k in kept_files):
                plan.ignored += 1
            else:
                kept.append(d)
        dirs[:] = kept
        for name in sorted(files):
            path = base / name
            rel = path.relative_to(root).as_posix()
            if _named(rel, named):
                plan.data.append(rel)
            elif path.is_symlink():
                plan.links.append((rel, _inner_link(path, root)))
            elif ignore.ignored(path, is_dir=False) and rel not in kept_files:
                plan.ignored += 1
            else:
                size = path.lstat().st_size
                (plan.large.append((rel, size)) if size > LARGE_BYTES else plan.copy.append(rel))
    return plan


def kept(edited: Sequence[str], args: Sequence[str]) -> list[str]:
    """What a copy holds even where git ignores it: the edited files and the program file ``args`` runs.

    (``make demo``'s copy of the example lives in the git-ignored .demo/.) A ``-m`` module or an
    absolute program path is not a file of the folder.
    """
    program = [args[0]] if args and args[0] != "-m" and not Path(args[0]).is_absolute() else []
    return [*edited, *program]


def _nothing(count: int) -> None:
    pass


@contextlib.contextmanager
def work_copy(
    root: Path, keep: Sequence[str] = (), link_data: Sequence[str] = (), *, purpose: str,
    started: Callable[[int], None] = _nothing, advance: Callable[[int], None] = _nothing,
) -> Iterator[tuple[Path, list[Path]]]:
    """A temporary copy of ``root`` by the rule above: (the copy, the originals of its linked data).

    The copy is a folder named as ``root`` inside a temporary folder of its own (the caller may put
    files beside it there); both are removed on exit. ``started`` gets the number of entries before
    they are copied, ``advance`` each one copied. CopyError (a FixError) where the rule refuses a
    file or copying fails; ``purpose`` names the option in that message.
    """
    plan = plan_copy(root, link_data, keep)
    with tempfile.TemporaryDirectory(prefix=f"tfretrace-{purpose.lstrip('-')}-") as tmp:
        copy = Path(tmp) / root.name
        copy.mkdir()
        started(plan.count)
        try:
            linked = make_copy(plan, root, copy, advance=advance)
        except (OSError, shutil.Error) as exc:
            raise CopyError(f"cannot copy {root} for {purpose} ({exc.__class__.__name__})") from None
        yield copy, linked


def _inside_root(name: str, root: Path) -> str:
    """A --link-data path relative to ``root`` (an absolute one must lead inside it); CopyError otherwise."""
    path = Path(name)
    if path.is_absolute():
        # The folders up to it resolved (``root`` is), the last part kept: a named link stays a link.
        path = Path(os.path.realpath(path.parent)) / path.name
        try:
            path = path.relative_to(root)
        except ValueError:
            raise CopyError(f"--link-data {name}: not a path inside the program's folder {root}") from None
    rel = Path(os.path.normpath(path)).as_posix()
    if rel == ".." or rel.startswith("../"):
        raise CopyError(f"--link-data {name}: not a path inside the program's folder {root}")
    return rel


def _inner_link(path: Path, root: Path) -> str:
    """The target of a link inside the folder, relative to the link's own folder; CopyError when it leads out."""
    target = Path(os.path.realpath(path))
    try:
        inside = target.relative_to(root)
    except ValueError:
        raise CopyError(
            f"{path.relative_to(root)} links to {target}, outside the program's folder: the copy would reach "
            "the original through it (name it with --link-data if the program only reads it)"
        ) from None
    return os.path.relpath(root / inside, path.parent.resolve())


def make_copy(
    plan: CopyPlan, root: Path, dest: Path, *, advance: Callable[[int], None] = lambda n: None
) -> list[Path]:
    """Fill ``dest`` by ``plan``; the originals of the linked data, for the check after the run."""
    root = root.resolve()
    linked: list[Path] = []
    for rel in plan.copy:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target, follow_symlinks=False)
        advance(1)
    for rel, size in plan.large:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _clone(root / rel, target):
            raise CopyError(
                f"{rel} is {size / 2**20:.0f} MiB and this file system cannot clone it copy-on-write: pass "
                f"--link-data {rel} if the program only reads it, or add it to .gitignore if it needs none of it"
            )
        advance(1)
    for rel, link in plan.links:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, target)
        advance(1)
    for rel in plan.data:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        linked.extend(_link(root / rel, target))
        advance(1)
    return linked


def _clone(source: Path, target: Path) -> bool:
    """A copy-on-write clone of ``source`` (FICLONE), or False where the file system has none."""
    try:
        with open(source, "rb") as src, open(target, "wb") as dst:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
    except OSError:
        target.unlink(missing_ok=True)
        return False
    shutil.copystat(source, target)
    return True


def _link(source: Path, target: Path) -> list[Path]:
    """Link a named file, or a named folder file by file; the originals to check after the run.

    A folder is made a real folder in the copy (its sub-folders too), so that a file the program
    creates or replaces there lands in the copy, not in the original. The original folders are
    returned with the files: an entry added or removed there changes their modification time.
    """
    if not source.is_dir():
        os.symlink(source, target)
        return [source]
    top = Path(os.path.realpath(source))  # a named link to a folder elsewhere: its folder
    found: list[Path] = []
    for folder, dirs, names in os.walk(top):
        here = Path(folder)
        into = target / here.relative_to(top)
        into.mkdir(exist_ok=True)
        found.append(here)
        # A link to a folder inside is not walked (it could loop): linked whole, like a file.
        for name in sorted(names + [d for d in dirs if (here / d).is_symlink()]):
            os.symlink(here / name, into / name)
            found.append(here / name)
    return found


def snapshot(paths: Sequence[Path]) -> dict[Path, tuple[int, int] | None]:
    """Size and modification time of each file (None: gone), to see whether a run changed one."""
    out: dict[Path, tuple[int, int] | None] = {}
    for path in paths:
        try:
            info = path.stat()
            out[path] = (info.st_size, info.st_mtime_ns)
        except OSError:
            out[path] = None
    return out
