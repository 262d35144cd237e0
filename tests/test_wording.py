"""Recorded values in plain words: Python floats without repr noise, the tracing context without jargon."""

from __future__ import annotations

import pytest

from tfretrace.records.events import Change, Leaf


@pytest.mark.parametrize(
    ("before", "after", "shown"),
    [
        ("float 0.05", "0.034999999999999996", "float 0.05 -> 0.035"),  # 0.05 * 0.7
        ("0.034999999999999996", "0.024499999999999997", "0.035 -> 0.0245"),
        ("0.07", "0.06999999999999999", "0.07 -> 0.06999999999999999"),  # equal at 12 digits: exact
        ("1e-05", "2.0000000000000003e-05", "1e-05 -> 2e-05"),
        ("3", "4", "3 -> 4"),  # an int, a string: as recorded
        ("'0.10000000000000002'", "'a'", "'0.10000000000000002' -> 'a'"),
    ],
)
def test_python_floats_show_12_significant_digits_while_they_still_differ(before: str, after: str, shown: str) -> None:
    change = Change("lr", "python-value", before, after)
    assert change.line() == f"lr: Python {shown}"
    assert (change.before, change.after) == (before, after)  # the record keeps the exact repr


def test_a_python_float_leaf_reads_without_repr_noise() -> None:
    assert Leaf("lr", "python", value="0.06999999999999999", type_name="float").describe() == "Python float 0.07"
    assert Leaf("n", "python", value="7", type_name="int").describe() == "Python int 7"


def test_the_expected_variable_creation_trace_is_said_in_words() -> None:
    line = Change("<context>.scope_type", "context", "VARIABLE_CREATION", "NO_VARIABLE_CREATION").line()
    assert "scope_type" not in line and "VARIABLE_CREATION" not in line and "expected" in line
    device = Change("<context>.device", "context", "default", "/cpu:0").line()
    assert device == "device changed: default -> /cpu:0"
