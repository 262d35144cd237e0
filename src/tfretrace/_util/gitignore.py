"""The ignore rules git applies: which files of a work tree a .gitignore or info/exclude leaves out."""

from __future__ import annotations

from pathlib import Path

import pathspec


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
