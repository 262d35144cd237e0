"""What applied steps' ``changes`` words excuse in a changed output (``fix --also-run`` and the benches share it)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tfretrace.fix.applying.announced import applied_changes, excusing, last_digits_only

BEFORE = "loss 0.15012345\nstep 10\n"


@pytest.mark.parametrize(("after", "excused"), [
    ("loss 0.15012399\nstep 10\n", True),  # the 6th significant digit: last digits
    ("loss 0.084\nstep 10\n", False),  # another prediction (#39 item 3: 0.150 -> 0.084)
    ("loss 0.15012345\nstep 11\n", False),  # an integer (a count) changed
    ("loss 0.15012345\nsteps 10\n", False),  # the words changed
])
def test_float_last_digits_excuses_only_numbers_moved_in_their_last_digits(after: str, excused: bool) -> None:
    assert last_digits_only(BEFORE, after) is excused
    assert excusing(BEFORE, after, ["float-last-digits"]) == (["float-last-digits"] if excused else [])


def test_a_word_that_changes_results_outright_excuses_any_change_and_no_word_excuses_nothing() -> None:
    assert excusing(BEFORE, "loss 0.084\n", ["float-last-digits", "random-stream"]) == [
        "float-last-digits", "random-stream"]
    assert excusing(BEFORE, "loss 0.15012399\nstep 10\n", []) == []


def _step(changes: str, safety: str) -> dict[str, Any]:
    """A saved plan step with one edit, as ``run --save`` writes it."""
    return {"cause": "shape-changed", "kind": "input-signature", "summary": "s", "code": "c",
            "edits": [{"path": "p.py", "line": 1, "col": 1, "end_line": 1, "end_col": 2, "text": "x"}],
            "traces_before": 4, "traces_after": 1, "by": "tfretrace", "changes": changes, "safety": safety,
            "checked": "tensorflow"}


def test_only_the_words_of_applied_steps_count() -> None:
    report = SimpleNamespace(plan=[_step("float-last-digits", "safe"), _step("random-stream", "unsafe")])
    # Without --unsafe-fixes the unsafe step is not written: its word explains nothing.
    assert applied_changes([report]) == {"float-last-digits"}
    assert applied_changes([report], unsafe=True) == {"float-last-digits", "random-stream"}
