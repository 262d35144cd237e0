"""Lint files and directories: discovery with excludes, safe reading, and the run's report."""

from __future__ import annotations

import ast
import io
import os
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path

from tfretrace.lint.checker import ALL_CODES, lint_tree
from tfretrace.lint.config import DEFAULT_EXCLUDES, MAX_FILE_SIZE
from tfretrace.lint.findings import Report, Skipped

_SUFFIXES = (".py", ".pyw")


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


def iter_files(paths: Iterable[Path], exclude: Sequence[str], root: Path) -> Iterator[Path]:
    """Python files under ``paths``. Raises FileNotFoundError for a path that does not exist.

    Files named explicitly are linted whatever their suffix (pre-commit passes them), unless
    a configured exclude matches; the built-in directory excludes only prune the walk.
    """
    for path in paths:
        if path.is_file():
            if not is_excluded(path, exclude, root):
                yield path
            continue
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no such file or directory")
        for folder, dirs, files in os.walk(path):
            base = Path(folder)
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in DEFAULT_EXCLUDES
                and not d.endswith(".egg-info")
                and not is_excluded(base / d, exclude, root)
            )
            for name in sorted(files):
                candidate = base / name
                if name.endswith(_SUFFIXES) and not is_excluded(candidate, exclude, root):
                    yield candidate


def read_source(path: Path, max_size: int = MAX_FILE_SIZE) -> str | Skipped:
    """The decoded text of a Python file, or why it is skipped; never raises for bad content."""
    shown = path.as_posix()
    try:
        size = path.stat().st_size
        if size > max_size:
            return Skipped(shown, f"file too large ({size} bytes > {max_size})")
        data = path.read_bytes()
    except OSError as exc:
        return Skipped(shown, f"cannot read: {exc.strerror or exc}")
    if b"\x00" in data:
        return Skipped(shown, "binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown codec in the coding cookie
        return Skipped(shown, f"bad encoding declaration: {exc.msg}")
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return Skipped(shown, f"cannot decode as {encoding} (add a coding cookie?)")


def parse(source: str, path: str) -> ast.Module | Skipped:
    """The module's tree, or why it cannot be parsed."""
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        return Skipped(path, f"syntax error at line {exc.lineno}: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:
        return Skipped(path, f"cannot parse: {type(exc).__name__}")


def lint_file(path: Path, report: Report, codes: Sequence[str], max_size: int) -> None:
    """Lint one file into ``report``; problems with the file itself become a Skipped entry."""
    source = read_source(path, max_size)
    if isinstance(source, Skipped):
        report.skipped.append(source)
        return
    shown = path.as_posix()
    tree = parse(source, shown)
    if isinstance(tree, Skipped):
        report.skipped.append(tree)
        return
    try:
        findings = lint_tree(tree, source, shown, codes)
    except RecursionError:  # absurdly deep nesting: report rather than crash
        report.skipped.append(Skipped(shown, "nesting too deep to analyse"))
        return
    report.files += 1
    report.lines += source.count("\n") + (not source.endswith("\n"))
    report.findings.extend(findings)


def lint_paths(
    paths: Iterable[str | Path],
    codes: Sequence[str] = ALL_CODES,
    exclude: Sequence[str] = (),
    max_size: int = MAX_FILE_SIZE,
    root: Path | None = None,
) -> Report:
    """Lint files and directories. Raises FileNotFoundError for a missing path."""
    base = (root or Path.cwd()).resolve()
    report = Report()
    for path in iter_files([Path(p) for p in paths], exclude, base):
        lint_file(path, report, codes, max_size)
    report.sort()
    return report
