"""The lint entries of the shared catalogue: codes, slugs, causes and the generated docs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tfretrace.lint import ALL_CODES
from tfretrace.lint._docs import BEGIN, END, rule_table
from tfretrace.records import catalogue

DOC = Path(__file__).parents[2] / "docs" / "lint.md"


def test_at_least_twelve_rules() -> None:
    assert len(ALL_CODES) >= 12


def test_entries_are_complete() -> None:
    for entry in catalogue.entries("lint"):
        assert entry.code.startswith("TFR1")
        assert entry.why and entry.fix and entry.bad and entry.good and entry.cause
        assert catalogue.get(entry.slug) is entry


def test_causes_name_runtime_slugs_or_unique_lint_only_slugs() -> None:
    lint = list(catalogue.entries("lint"))
    rule_slugs = {e.slug for e in lint}
    lint_only = [e.cause for e in lint if e.cause not in catalogue.RUNTIME_SLUGS]
    assert all(n == 1 for n in Counter(lint_only).values())
    assert not set(lint_only) & rule_slugs
    assert not rule_slugs & catalogue.RUNTIME_SLUGS


def test_doc_lists_every_code_with_the_generated_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert table.strip() == rule_table().strip()
    for code in ALL_CODES:
        assert f"`{code}`" in table
