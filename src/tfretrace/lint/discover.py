"""Which files a lint run reads: walking folders with excludes, .gitignore and hidden names."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path

import pathspec

from tfretrace.lint.config import DEFAULT_EXCLUDES

SUFFIXES = (".py", ".pyw", ".ipynb")


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def is_excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    """True when a pattern matches the file or folder name, or its path relative to ``root``."""
    if not patterns:
        return False
    rel = _relative(path, root)
    for pattern in patterns:
        pat = pattern.rstrip("/")
        if fnmatch(path.name, pat) or fnmatch(rel, pat) or fnmatch(rel, pat + "/*"):
            return True
    return False


class GitIgnore:
    """The ignore rules git applies under one repository: every .gitignore met, and info/exclude.

    Each file's patterns are matched relative to its own folder, as git does. A negation (``!x``)
    re-includes within the same file only, not against a parent folder's file: a rarely needed
    subtlety that keeps the check cheap and never ignores more than git would.
    """

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}

    def _spec(self, folder: Path, extra: Path | None = None) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            lines: list[str] = []
            for source in (extra, folder / ".gitignore"):
                if source is not None and source.is_file():
                    try:
                        lines += source.read_text(encoding="utf-8", errors="replace").splitlines()
                    except OSError:
                        continue
            self._specs[folder] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """True when a .gitignore above ``path`` (inside its repository) or info/exclude ignores it."""
        path = path.resolve()
        top = repository(path.parent if not is_dir else path)
        if top is None:
            return False
        folder = path.parent
        while True:
            extra = top / ".git" / "info" / "exclude" if folder == top else None
            spec = self._spec(folder, extra)
            if spec is not None:
                rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
            if folder == top or folder.parent == folder:
                return False
            folder = folder.parent


_REPOS: dict[Path, Path | None] = {}


def repository(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder`` (a folder with ``.git``), or None."""
    found = _REPOS.get(folder)
    if found is not None or folder in _REPOS:
        return found
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            _REPOS[folder] = candidate
            return candidate
    _REPOS[folder] = None
    return None


def iter_files(
    paths: Iterable[Path], exclude: Sequence[str], root: Path, *, gitignore: bool = True
) -> Iterator[Path]:
    """Python files and notebooks under ``paths``. Raises FileNotFoundError for a missing path.

    Files named explicitly are linted whatever their suffix or ignore rules (pre-commit passes
    them), unless a configured exclude matches. A folder walk skips the built-in excludes,
    hidden files and folders (``.name``), and, unless ``gitignore`` is off, what git ignores.
    """
    ignore = GitIgnore() if gitignore else None
    for path in paths:
        if not path.is_dir():
            # A file named explicitly, or something that is not a regular file (/dev/null, a
            # FIFO): read_source says why it is skipped rather than calling it missing.
            if not os.path.lexists(path):
                raise FileNotFoundError(f"{path}: no such file or directory")
            if not is_excluded(path, exclude, root):
                yield path
            continue
        for folder, dirs, files in os.walk(path):
            base = Path(folder)
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in DEFAULT_EXCLUDES
                and not d.startswith(".")
                and not d.endswith(".egg-info")
                and not is_excluded(base / d, exclude, root)
                and not (ignore is not None and ignore.ignored(base / d, is_dir=True))
            )
            for name in sorted(files):
                candidate = base / name
                if (
                    name.endswith(SUFFIXES)
                    and not name.startswith(".")
                    and not is_excluded(candidate, exclude, root)
                    and not (ignore is not None and ignore.ignored(candidate, is_dir=False))
                ):
                    yield candidate

