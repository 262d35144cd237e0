"""The last run's session, kept in the project's ``.tfretrace/`` folder (as pytest keeps lastfailed)."""

from __future__ import annotations

import os
from pathlib import Path

from tfretrace._util.config import find as find_config
from tfretrace._util.io import atomic_write_text
from tfretrace.records.session import Session

FOLDER = ".tfretrace"
NAME = "last-session.json"
# The folder ignores itself, as .pytest_cache does: nothing in it is ever committed by accident.
IGNORE = "# Written by tfretrace: the last run's session (tfretrace fix reads it).\n*\n"


def project_folder(start: Path) -> Path:
    """The folder of the nearest pyproject.toml with a ``[tool.tfretrace]`` table, else ``start``."""
    config = find_config(start)
    return config.parent if config is not None else start.resolve()


def keep(session: Session, project: Path) -> Path | None:
    """Save ``session`` as ``project/.tfretrace/last-session.json``; None where that cannot be done safely.

    Never writes outside the project: a ``.tfretrace`` or a session file that is a symbolic link,
    or anything there that is not a plain folder or file, is left alone (the run is not kept).
    An unwritable project is not an error: the report then names ``--save`` instead.
    """
    folder = project / FOLDER
    target = folder / NAME
    try:
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return None
        folder.mkdir(exist_ok=True)
        if target.is_symlink() or (target.exists() and not target.is_file()):
            return None
        if os.path.realpath(target.parent) != os.path.realpath(project / FOLDER) or not _inside(target, project):
            return None
        ignore = folder / ".gitignore"
        if not ignore.exists() and not ignore.is_symlink():
            atomic_write_text(ignore, IGNORE)
        session.save(target)
    except OSError:
        return None
    return target


def _inside(path: Path, project: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(project)
    return os.path.commonpath([real, top]) == top


def shown(path: Path, start: Path) -> str:
    """The kept file's path as a command typed in ``start`` names it: relative where it lies below."""
    relative = os.path.relpath(path, start)
    return str(path) if relative.startswith("..") else relative
