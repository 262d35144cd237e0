"""Objects of one def in use side by side (two layers of one class) are not retraces; objects made again are."""

from __future__ import annotations

from typing import Any

import pytest

import tfretrace

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


class Scale(tf.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = tf.Variable(factor)

    @tf.function
    def __call__(self, x: Any) -> Any:
        return x * self.factor


def _row(session: Any, name: str) -> Any:
    (row,) = [f for f in session.functions if f.name.endswith(name)]
    return row


def test_two_instances_called_in_turn_each_trace_once_as_their_own_first_trace() -> None:
    with tfretrace.watch(warn=False, log=False) as mon:
        first, second = Scale(2.0), Scale(3.0)
        for _ in range(3):
            first(tf.ones([2]))
            second(tf.ones([2]))
    row = _row(mon.session(), "Scale.__call__")
    counted = first.__call__.experimental_get_tracing_count() + second.__call__.experimental_get_tracing_count()
    assert row.traces == counted == 2
    assert [e.cause for e in row.events] == ["first-trace", "first-trace"]
    assert row.retraces == 0 and row.events[1].expected


def test_an_object_made_again_per_call_is_still_a_new_function_object() -> None:
    made = []

    def step(x: Any) -> Any:
        @tf.function
        def double(v: Any) -> Any:
            return v * 2.0

        made.append(double)
        return double(x)

    with tfretrace.watch(warn=False, log=False) as mon:
        for _ in range(3):
            step(tf.ones([2]))
    row = _row(mon.session(), "double")
    assert row.traces == sum(f.experimental_get_tracing_count() for f in made) == 3
    assert [e.cause for e in row.events] == ["first-trace", "new-function-object", "new-function-object"]
    assert row.retraces == 2
