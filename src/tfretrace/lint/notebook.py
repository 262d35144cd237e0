"""Jupyter notebooks: their code cells as one Python source, and lines mapped back to cells."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tfretrace._util.ipython_syntax import CELL_MAGIC, ipython_lines
from tfretrace._util.text import source_lines


class NotebookError(ValueError):
    """A file named .ipynb that is not a notebook this linter can read."""


@dataclass(frozen=True)
class NotebookSource:
    """The code cells joined into one module, and for each of its lines the (cell, line) it came from.

    Cells are numbered like Jupyter shows them in order: the first code cell is cell 1 (markdown
    and raw cells are not counted). IPython-only lines are replaced by ``pass`` at the same
    indentation so line numbers and blocks stay intact.
    """

    text: str
    origin: tuple[tuple[int, int], ...]

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line in the cell) of a 1-based line of :attr:`text`."""
        if 1 <= line <= len(self.origin):
            return self.origin[line - 1]
        return self.origin[-1] if self.origin else (1, 1)


def read_notebook(data: str) -> NotebookSource:
    """Parse notebook JSON (nbformat 4); raise NotebookError when it is not one."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise NotebookError(f"not a notebook (invalid JSON: {str(exc).splitlines()[0]})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a notebook (no 'cells' list)")
    lines: list[str] = []
    origin: list[tuple[int, int]] = []
    number = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        if not isinstance(text, str):
            raise NotebookError(f"not a notebook (cell {number} has no text source)")
        cell_lines = source_lines(text) or [""]
        magic_cell = bool(CELL_MAGIC.match(cell_lines[0]))
        escapes = set() if magic_cell else ipython_lines(cell_lines)
        for index, line in enumerate(cell_lines, start=1):
            if magic_cell:
                line = ""  # a %%cell magic's body is not Python run by this kernel as written
            elif index - 1 in escapes:
                indent = line[: len(line) - len(line.lstrip())]
                line = f"{indent}pass"
            lines.append(line)
            origin.append((number, index))
    return NotebookSource("\n".join(lines) + "\n", tuple(origin))


# JSON layouts notebooks are saved in: nbformat's (indent 1, sorted keys, UTF-8 text) first.
_LAYOUTS = tuple(
    (indent, sort_keys, ensure_ascii, end)
    for indent in (1, 2, 4)
    for sort_keys in (True, False)
    for ensure_ascii in (False, True)
    for end in ("\n", "")
)


def with_new_lines(data: str, source: NotebookSource, new_text: str) -> str:
    """The notebook ``data`` with each line that differs between ``source.text`` and ``new_text``
    written back into its cell, and the JSON saved in the file's own layout.

    Raises NotebookError when that cannot be done exactly: a change in the number of lines, a line
    that was IPython syntax (read as ``pass``), or a JSON layout that re-saving would not reproduce
    byte for byte (the whole file would show as changed).
    """
    old, new = source.text.split("\n"), new_text.split("\n")
    if len(old) != len(new):
        raise NotebookError("a fix would change the number of lines of a cell")
    document = json.loads(data)
    layout = next((lay for lay in _LAYOUTS if _dumps(document, lay) == data), None)
    if layout is None:
        raise NotebookError("its JSON layout would change on saving")
    cells = [c for c in document["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"]
    for index, (before, after) in enumerate(zip(old, new)):
        if before == after:
            continue
        number, line = source.origin[index]
        cell = cells[number - 1]
        raw = cell.get("source", "")
        text = "".join(raw) if isinstance(raw, list) else raw
        lines = source_lines(text, keepends=True)
        if isinstance(raw, list) and raw != lines:
            raise NotebookError(f"cell {number} splits its source unusually")
        body = lines[line - 1].rstrip("\r\n")
        if body != before:  # an IPython line read as `pass`: never edited
            raise NotebookError(f"cell {number}, line {line} is not the Python that was linted")
        lines[line - 1] = after + lines[line - 1][len(body):]
        cell["source"] = lines if isinstance(raw, list) else "".join(lines)
    return _dumps(document, layout)


def _dumps(document: object, layout: tuple[int, bool, bool, str]) -> str:
    indent, sort_keys, ensure_ascii, end = layout
    return json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + end
