"""``tfretrace run x.ipynb``: a notebook's code cells run in order, in one ``__main__``, like a script."""

from __future__ import annotations

import json
import linecache
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from tfretrace._util.ipython_syntax import ipython_lines
from tfretrace._util.text import source_lines

# Magics that only set up the notebook's display or extensions: outside Jupyter they do nothing,
# so a cell may keep them (they are skipped, not run).
_NO_OP_MAGICS = re.compile(r"^\s*%(?:matplotlib|config|load_ext|reload_ext|autoreload)\b")
HOW = "run it in Jupyter with %load_ext tfretrace, or: jupyter nbconvert --execute --to notebook NOTEBOOK"


class NotebookRunError(ValueError):
    """The notebook cannot run as plain Python: one line saying where and what to do instead."""


@dataclass(frozen=True)
class Cell:
    """One code cell: its number among the code cells (from 1) and its Python source."""

    number: int
    source: str


def code_cells(path: Path) -> list[Cell]:
    """The notebook's code cells as Python, or NotebookRunError naming the first IPython-only line."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise NotebookRunError(f"{path}: not a notebook ({str(exc).splitlines()[0]})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookRunError(f"{path}: not a notebook (no 'cells' list)")
    found: list[Cell] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        text = "".join(raw) if isinstance(raw, list) else raw
        if not isinstance(text, str):
            raise NotebookRunError(f"{path}: not a notebook (cell {len(found) + 1} has no text source)")
        lines = source_lines(text)
        number = len(found) + 1
        # IPython syntax as the linter reads it: at the start of a logical line only.
        for index in sorted(ipython_lines(lines)):
            line = lines[index]
            if _NO_OP_MAGICS.match(line) and not line.lstrip().startswith("%%"):
                lines[index] = line[: len(line) - len(line.lstrip())] + "pass  # " + line.strip()
            else:
                shown = line.strip() if len(line.strip()) <= 40 else line.strip()[:37] + "..."
                raise NotebookRunError(
                    f"{path}: cell {number}, line {index + 1} is IPython syntax ({shown!r}), not Python; {HOW}"
                )
        found.append(Cell(number, "\n".join(lines) + "\n"))
    return found


def run_notebook(path: str) -> None:
    """Run the code cells in order in a fresh ``__main__``, as a script's body would run."""
    cells = code_cells(Path(path))
    main = types.ModuleType("__main__")
    main.__file__ = path
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        for cell in cells:
            # A name per cell, with its source in linecache: tracebacks and tfretrace's call sites
            # show the cell's lines like a script's.
            name = f"{path} (cell {cell.number})"
            linecache.cache[name] = (len(cell.source), None, source_lines(cell.source, keepends=True), name)
            exec(compile(cell.source, name, "exec"), main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
