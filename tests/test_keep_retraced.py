"""The nested closures a run keeps alive for the probe: only when asked, from their first trace, bounded, released."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pytest

from tfretrace._tf import counters

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _closures(n: int) -> list[Any]:
    made = []
    for i in range(n):
        offset = float(i)

        def shifted(x: Any, offset: float = offset) -> Any:
            return x + offset + scale

        shifted.__qualname__ = f"outer.<locals>.shifted{i}"
        made.append(tf.function(shifted))
    return made


scale = 1.0


def _over_offset() -> Any:
    offset = 2.0

    def step(x: Any) -> Any:
        return x + offset

    return tf.function(step)


@pytest.fixture
def keeping() -> Iterator[None]:
    counters.keep_retraced(True)
    yield
    counters.keep_retraced(False)


def test_a_plain_run_keeps_nothing() -> None:
    function = _over_offset()
    for _ in range(3):
        counters.note_nested_trace(function)
    assert counters.kept_closures(function.python_function.__qualname__) == []


def test_kept_once_from_the_first_trace_in_order_and_released(keeping: None) -> None:
    first, second = _over_offset(), _over_offset()
    name = first.python_function.__qualname__
    for function in (first, first, second):
        counters.note_nested_trace(function)
    assert counters.kept_closures(name) == [first, second]
    counters.keep_retraced(False)
    assert counters.kept_closures(name) == []


def test_only_closures_and_bounded_per_def_and_in_defs(keeping: None) -> None:
    # _closures' defs close over nothing (a default, a module global): hoist-def's kept_nested has them.
    for function in _closures(3):
        counters.note_nested_trace(function)
    assert all(counters.kept_closures(f"outer.<locals>.shifted{i}") == [] for i in range(3))
    made = []
    for i in range(20):
        function = _over_offset()
        function.python_function.__qualname__ = f"maker{i}.<locals>.step"
        made.append(function)
        counters.note_nested_trace(function)
    kept = [f for i in range(20) for f in counters.kept_closures(f"maker{i}.<locals>.step")]
    assert kept == made[:16]
    counters.keep_retraced(False)
    counters.keep_retraced(True)
    many = [_over_offset() for _ in range(64)]
    for function in many:
        counters.note_nested_trace(function)  # one def's name: _over_offset.<locals>.step
    assert counters.kept_closures("_over_offset.<locals>.step") == many
    # A 65th object: the probe asks only where every object was kept, so none is kept any more.
    counters.note_nested_trace(_over_offset())
    counters.note_nested_trace(_over_offset())
    assert counters.kept_closures("_over_offset.<locals>.step") == []


def test_a_librarys_closure_is_never_kept(keeping: None) -> None:
    plain = _over_offset().python_function
    code = plain.__code__.replace(co_filename="/venv/lib/python3.11/site-packages/somelib/train.py")
    library = tf.function(types.FunctionType(code, plain.__globals__, plain.__name__, None, plain.__closure__))
    counters.note_nested_trace(library)
    assert counters.kept_closures(plain.__qualname__) == []
