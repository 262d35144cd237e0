"""Write the kinds table of docs/fix-catalogue.md from the fix kinds' registry (each kind's ``Kind.row``).

Usage: python tools/fix_catalogue.py [--check]

The table sits between the document's ``kinds table`` markers; ``--check`` exits 1 where the document
holds another text than the registry gives (tests/test_fix_kinds.py checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fix-catalogue.md"
START = "<!-- kinds table: generated from tfretrace.fix.kinds.REGISTRY"
END = "<!-- end of kinds table -->\n"


def replaced(text: str, table: str) -> str:
    """The document with the text between its markers replaced by ``table``; ValueError without the markers."""
    start = text.index(START)
    body = text.index("\n", start) + 1
    end = text.index(END, body)
    return text[:body] + table + text[end:]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from tfretrace.fix.kinds import catalogue_table

    text = DOC.read_text(encoding="utf-8")
    new = replaced(text, catalogue_table())
    if argv[:1] == ["--check"]:
        if new != text:
            print(f"{DOC}: the kinds table is not the registry's; run python tools/fix_catalogue.py")
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
