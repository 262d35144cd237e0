"""Commands tfretrace prints for the user to run next, spelled so that they run as printed."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def _same_file(a: str | None, b: str) -> bool:
    if a is None:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _shown(path: str) -> str:
    """A path relative to the working directory where it lies below it (``.venv/bin/tfretrace``)."""
    resolved = Path(os.path.abspath(path))
    try:
        relative = resolved.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(resolved))
    # A bare relative name would be looked up on PATH by the shell: keep the folder in it.
    text = str(relative) if relative.parent != Path(".") else f"./{relative}"
    return shlex.quote(text)


def python_command() -> str:
    """``python`` when the shell's ``python`` is this interpreter, else this interpreter's path.

    ``make demo`` runs tfretrace from ``.venv`` without activating it: the ``python`` on PATH there
    may lack TensorFlow, so a printed ``python prog.py`` would fail where ``.venv/bin/python`` runs.
    """
    executable = sys.executable or "python"
    return "python" if _same_file(shutil.which("python"), executable) else _shown(executable)


def tfretrace_command() -> str:
    """``tfretrace`` when that name on PATH is this very program; else the path or ``-m`` form that ran."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if Path(argv0).name == "tfretrace":
        if _same_file(shutil.which("tfretrace"), argv0):
            return "tfretrace"
        return _shown(argv0)
    # `python -m tfretrace` (argv0 is the package's __main__.py), or tfretrace called from code.
    if _same_file(shutil.which("tfretrace"), os.path.join(os.path.dirname(sys.executable), "tfretrace")):
        return "tfretrace"
    return f"{python_command()} -m tfretrace"


def fold_command(label: str, words: list[str], width: int) -> str:
    """``label`` then a shell command of already-quoted ``words``, folded with ``\\`` to fit ``width``.

    A command wider than the terminal would wrap mid-word; a backslash-newline keeps it one
    command when pasted into a shell, so it still runs as printed.
    """
    indent = " " * len(label)
    lines: list[str] = []
    line = label
    fresh = True  # nothing after the label or the indent yet
    for word in words:
        candidate = line + word if fresh else f"{line} {word}"
        # Leave room for the " \\" that continues a line.
        if not fresh and len(candidate) + 2 > width:
            lines.append(line + " \\")
            line = indent + word
        else:
            line = candidate
        fresh = False
    lines.append(line)
    return "\n".join(lines)
