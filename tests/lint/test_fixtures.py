"""Every rule against its fixture file: expected codes are trailing `# expect: CODE` comments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfretrace.lint import ALL_CODES, lint_source
from tfretrace.records import catalogue

FIXTURES = Path(__file__).parent / "fixtures"
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TFR\d+(?:\s*,\s*TFR\d+)*)(?:\s*\((?P<sure>likely)\))?")


def expected(source: str) -> set[tuple[int, str, str]]:
    """(line, code, confidence) per `# expect: CODE` (confirmed) or `# expect: CODE (likely)`."""
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            sure = match.group("sure") or "confirmed"
            found |= {(number, code.strip(), sure) for code in match.group("codes").split(",")}
    return found


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("TFR*.py")), ids=lambda p: p.stem)
def test_fixture(fixture: Path) -> None:
    source = fixture.read_text(encoding="utf-8")
    got = {(f.line, f.code, f.confidence) for f in lint_source(source, str(fixture))}
    assert got == expected(source)
    # The fixture exercises its own rule at least once.
    assert any(code == fixture.stem for _, code, _ in got)


def test_every_lint_code_has_a_fixture() -> None:
    codes = {entry.code for entry in catalogue.entries("lint")}
    assert codes == set(ALL_CODES)
    assert codes == {p.stem for p in FIXTURES.glob("TFR*.py")}
