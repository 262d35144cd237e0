"""Which files a lint run reads: walking folders with excludes, .gitignore and hidden names."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path

from tfretrace._util.gitignore import GitIgnore
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

