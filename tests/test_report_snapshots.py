"""Snapshot tests of whole text reports: each example's stored session, at 80 and 120 columns.

Each ``tests/data/report_sessions/NAME.json`` is the session ``tfretrace run --save`` wrote for
``examples/NAME.py``; its default text report must equal the reviewed
``tests/snapshots/report/NAME.WIDTH.txt``. An intended change to the report regenerates them with
``TFRETRACE_UPDATE_SNAPSHOTS=1 pytest tests/test_report_snapshots.py``; the diff is reviewed and
committed with the change. No TensorFlow: a report is a function of the session.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfretrace.records.session import load
from tfretrace.render.text import TextRenderer

HERE = Path(__file__).parent
SESSIONS = HERE / "data" / "report_sessions"
SNAPSHOTS = HERE / "snapshots" / "report"
EXAMPLES = HERE.parent / "examples"
UPDATE = os.environ.get("TFRETRACE_UPDATE_SNAPSHOTS") == "1"
NAMES = sorted(p.stem for p in SESSIONS.glob("*.json"))


def test_every_example_has_a_stored_session() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == NAMES


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", NAMES)
def test_the_report_equals_its_reviewed_snapshot(name: str, width: int) -> None:
    text = TextRenderer(width=width).render(load(SESSIONS / f"{name}.json"))
    snapshot = SNAPSHOTS / f"{name}.{width}.txt"
    if UPDATE:
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.is_file(), f"no snapshot {snapshot.name}: run with TFRETRACE_UPDATE_SNAPSHOTS=1"
    assert text == snapshot.read_text(encoding="utf-8")
    # Every line fits the width it was drawn for, code included.
    assert max(len(line) for line in text.split("\n")) <= width
