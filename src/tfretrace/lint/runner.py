"""Lint a run's files: safe reading, notebooks, a findings cache by content, and worker processes."""

from __future__ import annotations

import ast
import hashlib
import hmac
import io
import json
import os
import secrets
import tokenize
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from tfretrace._util.io import atomic_write_text
from tfretrace._util.io import read_regular as _read_regular
from tfretrace._util.version import __version__
from tfretrace.lint.checker import ALL_CODES, lint_tree, python_lines
from tfretrace.lint.config import MAX_FILE_SIZE
from tfretrace.lint.discover import is_excluded, iter_files
from tfretrace.lint.findings import CONFIRMED, LIKELY, Finding, Report, Skipped
from tfretrace.lint.notebook import NotebookError, read_notebook

__all__ = ["is_excluded", "iter_files", "lint_paths", "parse", "read_source"]

# Below this many files a pool costs more to start than it saves.
_PARALLEL_FROM = 16
_CACHE_FORMAT = 4  # 3: entries signed with the user's key; 4: a finding's confidence
# The index keeps entries of files other runs linted (pre-commit lints only the staged files),
# least recently used first, and drops the oldest beyond this many: an edited file leaves its old
# entry behind, so without a bound the index would grow with every edit.
MAX_CACHE_ENTRIES = 20_000
CONFIDENCES = (CONFIRMED, LIKELY)


@dataclass(frozen=True)
class FileResult:
    """What linting one file gave: findings, or why it was skipped, and its line count."""

    findings: tuple[Finding, ...]
    skipped: Skipped | None
    lines: int


def read_source(path: Path, max_size: int = MAX_FILE_SIZE) -> str | Skipped:
    """The decoded text of a Python file, or why it is skipped; never raises or blocks."""
    data = read_bytes(path, max_size)
    return data if isinstance(data, Skipped) else decode(data, path.as_posix())


def read_bytes(path: Path, max_size: int) -> bytes | Skipped:
    """The raw content of a regular file, or why it is not read."""
    try:
        data = _read_regular(path, max_size)
    except OSError as exc:
        return Skipped(path.as_posix(), f"cannot read: {exc.strerror or exc}", error=True)
    return Skipped(path.as_posix(), data) if isinstance(data, str) else data


def decode(data: bytes, shown: str) -> str | Skipped:
    """Text by the file's coding cookie (PEP 263), or why it cannot be decoded."""
    if b"\x00" in data:
        return Skipped(shown, "binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown codec in the coding cookie
        return Skipped(shown, f"bad encoding declaration: {exc.msg}", error=True)
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return Skipped(shown, f"cannot decode as {encoding} (add a coding cookie?)", error=True)


def parse(source: str, path: str) -> ast.Module | Skipped:
    """The module's tree, or why it cannot be parsed."""
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        return Skipped(path, f"syntax error at line {exc.lineno}: {exc.msg}", error=True)
    except (ValueError, RecursionError, MemoryError) as exc:
        return Skipped(path, f"cannot parse: {type(exc).__name__}")


def lint_content(data: bytes, shown: str, codes: Sequence[str]) -> FileResult:
    """Lint one file's bytes (a notebook when ``shown`` ends in .ipynb)."""
    text = decode(data, shown)
    if isinstance(text, Skipped):
        return FileResult((), text, 0)
    origin = None
    if shown.endswith(".ipynb"):
        try:
            notebook = read_notebook(text)
        except NotebookError as exc:
            return FileResult((), Skipped(shown, str(exc), error=True), 0)
        text, origin = notebook.text, notebook
    try:
        tree = ast.parse(text, filename=shown)
    except SyntaxError as exc:
        where = f"line {exc.lineno}"
        if origin is not None:
            cell, line = origin.locate(exc.lineno or 1)
            where = f"cell {cell}, line {line}"
        return FileResult((), Skipped(shown, f"syntax error at {where}: {exc.msg}", error=True), 0)
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileResult((), Skipped(shown, f"cannot parse: {type(exc).__name__}"), 0)
    try:
        findings = lint_tree(tree, text, shown, codes)
    except RecursionError:  # absurdly deep nesting: report rather than crash
        return FileResult((), Skipped(shown, "nesting too deep to analyse"), 0)
    findings = fingerprinted(findings, python_lines(text))
    if origin is not None:
        findings = [_in_cell(f, *origin.locate(f.line)) for f in findings]
    lines = text.count("\n") + (not text.endswith("\n"))
    return FileResult(tuple(findings), None, lines)


def _in_cell(finding: Finding, cell: int, line: int) -> Finding:
    return replace(finding, line=line, cell=cell)


def fingerprinted(findings: Sequence[Finding], lines: Sequence[str]) -> list[Finding]:
    """Each finding with a fingerprint of its code and source line (``hash:N`` for the Nth equal one)."""
    seen: dict[str, int] = {}
    out = []
    for finding in findings:
        text = lines[finding.line - 1].strip() if 0 < finding.line <= len(lines) else ""
        digest = hashlib.sha256(f"{finding.code}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
        seen[digest] = seen.get(digest, 0) + 1
        out.append(replace(finding, fingerprint=f"{digest}:{seen[digest]}"))
    return out


class Cache:
    """Findings per file content, tool version and rule selection: one JSON index per folder.

    The index is read once at the start of a run and written once, atomically, at its end: the
    entries this run used last, after the older ones it kept (at most ``MAX_CACHE_ENTRIES``, least
    recently used dropped first). A hit skips decoding, parsing and every rule; an unreadable or
    foreign index is empty, and a folder that cannot be written only costs speed.

    A cache folder can be committed to a repository or unpacked from an archive, and its keys are
    hashes anyone can compute: every entry is signed with a secret of this user's (kept outside
    any project, see :func:`_secret`), and an entry whose signature or shape is wrong is a miss.
    A cache never changes what lint reports, only how fast.
    """

    def __init__(self, folder: Path, codes: Sequence[str]) -> None:
        # The layout has a number of its own, so a format change never reads old entries.
        self.folder = folder
        self.index = folder / f"lint-{__version__}-{_CACHE_FORMAT}.json"
        self._codes = frozenset(codes)
        self._salt = (__version__ + "\0" + "\0".join(codes) + "\0").encode()
        self._secret = _secret()
        self._old: dict[str, object] = {}
        self._new: dict[str, object] = {}
        if self._secret is None:
            return  # nothing can be trusted, so nothing is read
        try:
            loaded = json.loads(self.index.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                self._old = loaded
        except (OSError, ValueError, RecursionError):
            pass

    def key(self, data: bytes, shown: str) -> str:
        """The entry's key: the file's content, its kind, this tfretrace's version and the rule selection."""
        kind = b"ipynb" if shown.endswith(".ipynb") else b"py"
        return hashlib.sha256(self._salt + kind + b"\0" + data).hexdigest()

    def _sign(self, key: str, body: object) -> str:
        assert self._secret is not None
        text = json.dumps([key, body], separators=(",", ":"), sort_keys=True)
        return hmac.new(self._secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def get(self, key: str, shown: str) -> FileResult | None:
        """The stored result for ``key``, or None when there is none this user's tfretrace wrote."""
        entry = self._old.get(key)
        if self._secret is None or not isinstance(entry, list) or len(entry) != 2:
            return None
        body, signature = entry
        if not isinstance(signature, str) or not hmac.compare_digest(signature, self._sign(key, body)):
            return None
        result = self._result(body, shown)
        if result is not None:
            self._new[key] = entry
        return result

    def _result(self, body: object, shown: str) -> FileResult | None:
        """A well-formed entry's result; None for any other shape (a miss, never a crash)."""
        if not isinstance(body, list) or len(body) != 3:
            return None
        findings, skipped, lines = body
        if not isinstance(findings, list) or not _count(lines):
            return None
        out = []
        for item in findings:
            if not (isinstance(item, list) and len(item) == 7):
                return None
            line, column, code, message, cell, fingerprint, confidence = item
            if not (_count(line) and _count(column) and code in self._codes and isinstance(message, str)
                    and (cell is None or _count(cell)) and isinstance(fingerprint, str)
                    and confidence in CONFIDENCES):
                return None
            out.append(Finding(shown, line, column, code, message, cell, fingerprint, confidence))
        if skipped is not None and not (
            isinstance(skipped, list) and len(skipped) == 2
            and isinstance(skipped[0], str) and isinstance(skipped[1], bool)
        ):
            return None
        return FileResult(tuple(out), Skipped(shown, skipped[0], skipped[1]) if skipped else None, lines)

    def put(self, key: str, result: FileResult) -> None:
        """Keep ``result`` for ``key``, signed."""
        if self._secret is None:
            return
        body = [
            [[f.line, f.column, f.code, f.message, f.cell, f.fingerprint, f.confidence] for f in result.findings],
            [result.skipped.reason, result.skipped.error] if result.skipped else None,
            result.lines,
        ]
        self._new[key] = [body, self._sign(key, body)]

    def save(self) -> None:
        """Write the kept entries; nothing is written when this run added none."""
        if self._secret is None:
            return
        if all(self._old.get(key) == entry for key, entry in self._new.items()):
            return  # every entry was a hit: the index already holds them all
        # Entries this run used go last (most recent); older ones fill what is left of the bound.
        room = max(0, MAX_CACHE_ENTRIES - len(self._new))
        older = [key for key in self._old if key not in self._new]
        kept = {key: self._old[key] for key in older[max(0, len(older) - room):]}
        kept.update(self._new)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            marker = self.folder / ".gitignore"
            if not marker.exists():
                atomic_write_text(marker, "# written by tfretrace lint\n*\n")
            atomic_write_text(self.index, json.dumps(kept, separators=(",", ":")))
        except OSError:
            pass


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _secret() -> bytes | None:
    """This user's key for signing cache entries, made once; None when it can be neither read nor made.

    It lives in the user's cache folder ($XDG_CACHE_HOME or ~/.cache, in a folder of mode 0700),
    never in a project, so a cache that arrives with a repository cannot carry entries that pass as
    this user's.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "tfretrace" / "private"
    path = folder / "lint-cache-key"
    try:
        data = _read_regular(path, 1024)
        if isinstance(data, bytes) and len(data) >= 32:
            return data
    except OSError:
        pass
    try:
        # A folder only this user can enter: the key is never readable by others, even for a moment.
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        # Two first runs at once each write a key and the last one stays: the other's entries are misses.
        atomic_write_text(path, secrets.token_hex(32))
        data = _read_regular(path, 1024)
    except OSError:
        return None
    return data if isinstance(data, bytes) and len(data) >= 32 else None


def _lint_many(items: list[tuple[bytes, str]], codes: Sequence[str]) -> list[FileResult]:
    return [lint_content(data, shown, codes) for data, shown in items]


def lint_paths(
    paths: Iterable[str | Path],
    codes: Sequence[str] = ALL_CODES,
    exclude: Sequence[str] = (),
    max_size: int = MAX_FILE_SIZE,
    root: Path | None = None,
    *,
    jobs: int = 1,
    cache_dir: Path | None = None,
    gitignore: bool = True,
) -> Report:
    """Lint files and directories. Raises FileNotFoundError for a missing path.

    ``jobs`` > 1 lints in that many worker processes; ``cache_dir`` keeps findings per file
    content so an unchanged file is not linted again.
    """
    base = (root or Path.cwd()).resolve()
    files = list(iter_files([Path(p) for p in paths], exclude, base, gitignore=gitignore))
    cache = Cache(cache_dir, codes) if cache_dir is not None else None
    results: list[FileResult | None] = []
    todo: list[tuple[int, bytes, str, str]] = []  # (slot, content, shown path, cache key)
    for path in files:
        shown = path.as_posix()
        data = read_bytes(path, max_size)
        if isinstance(data, Skipped):
            results.append(FileResult((), data, 0))
            continue
        key = cache.key(data, shown) if cache is not None else ""
        hit = cache.get(key, shown) if cache is not None else None
        results.append(hit)
        if hit is None:
            todo.append((len(results) - 1, data, shown, key))
    if jobs > 1 and len(todo) >= _PARALLEL_FROM:
        size = max(1, len(todo) // (jobs * 8))
        batches = [[(d, s) for _, d, s, _ in todo[i : i + size]] for i in range(0, len(todo), size)]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            done = [r for batch in pool.map(_lint_many, batches, [codes] * len(batches)) for r in batch]
    else:
        done = [lint_content(data, shown, codes) for _, data, shown, _ in todo]
    for (slot, _, _, key), fresh in zip(todo, done):
        results[slot] = fresh
        if cache is not None:
            cache.put(key, fresh)
    if cache is not None:
        cache.save()
    report = Report(root=str(base))
    for result in results:
        assert result is not None  # every slot is a hit or was linted above
        if result.skipped is not None:
            report.skipped.append(result.skipped)
            continue
        report.files += 1
        report.lines += result.lines
        report.findings.extend(result.findings)
    report.sort()
    return report
