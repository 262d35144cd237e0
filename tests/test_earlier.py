"""Traces made before a monitor met a function: read from TensorFlow's cache, compared and counted."""

from __future__ import annotations

import typing
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfretrace  # noqa: E402
from schema_helpers import schema_errors  # noqa: E402
from tfretrace._tf.earlier import cached_traces  # noqa: E402
from tfretrace.budget import strict_from_env  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402

pytestmark = pytest.mark.tf

pytest_plugins = ["pytester"]


def watch() -> typing.ContextManager[tfretrace.Monitor]:
    return tfretrace.watch(warn=False, log=False)


def flags(fn: FunctionReport) -> list[tuple[str, bool, bool]]:
    """(cause, earlier, expected) of each event."""
    return [(e.cause, e.earlier, e.expected) for e in fn.events]


def test_warm_up_then_watch_then_new_shape_is_a_shape_change_against_the_warm_trace() -> None:
    @tf.function
    def warm(x: Any, scale: Any) -> Any:
        return x * scale

    warm(tf.zeros([2, 3]), 1.0)
    with watch() as mon:
        warm(tf.zeros([2, 3]), 1.0)  # cached: nothing happens
        warm(tf.zeros([2, 4]), 1.0)
    fn = mon.session().function("warm")
    assert flags(fn) == [("first-trace", True, True), ("shape-changed", False, False)]
    assert (fn.traces, fn.earlier_traces, fn.retraces, fn.calls) == (2, 1, 1, 2)
    assert fn.traces == warm.experimental_get_tracing_count()
    new = fn.events[1]
    assert [(c.path, c.kind, c.before, c.after) for c in new.changes] == [("x", "shape", "(2, 3)", "(2, 4)")]
    assert new.closest == (1,) and new.calls_since_previous is None  # calls before the monitor: unknown
    earlier = fn.events[0]
    assert (earlier.call_site, earlier.seconds, earlier.time, earlier.calls_total) == (None, 0.0, 0.0, None)
    assert (earlier.signature[0].path, earlier.signature[0].shape) == ("x", (2, 3))
    doc = mon.session().to_dict()
    assert schema_errors(doc) == []
    saved = doc["functions"][0]
    assert saved["earlier_traces"] == 1 and [e["earlier"] for e in saved["events"]] == [True, False]
    assert tfretrace.Session.from_dict(doc).function("warm").events[0].earlier


def test_python_scalar_warm_up_then_a_new_value() -> None:
    @tf.function
    def scaled(x: Any, n: int) -> Any:
        return x * n

    scaled(tf.zeros([1]), 1)
    scaled(tf.zeros([1]), 2)
    with watch() as mon:
        scaled(tf.zeros([1]), 2)  # cached
        scaled(tf.zeros([1]), 3)
    fn = mon.session().function("scaled")
    assert flags(fn) == [
        ("first-trace", True, True), ("python-value-changed", True, False), ("python-value-changed", False, False),
    ]
    assert (fn.traces, fn.earlier_traces, fn.retraces) == (3, 2, 2) == (scaled.experimental_get_tracing_count(), 2, 2)
    assert [(c.path, c.kind, c.after) for c in fn.events[2].changes] == [("n", "python-value", "3")]
    assert fn.events[2].closest == (2, 1)  # both warm values are one change away: newest first


def test_two_warm_shapes_under_reduce_retracing_then_a_third_and_a_new_rank() -> None:
    @tf.function(reduce_retracing=True)
    def relaxed(x: Any) -> Any:
        return x + 1.0

    relaxed(tf.zeros([2]))
    relaxed(tf.zeros([3]))  # traced generalized: x of shape (None,)
    with watch() as mon:
        relaxed(tf.zeros([4]))  # the generalized trace covers it: no trace
        relaxed(tf.zeros([4, 4]))
    fn = mon.session().function("relaxed")
    assert [e.cause for e in fn.events] == ["first-trace", "shape-changed", "shape-changed"]
    assert [e.earlier for e in fn.events] == [True, True, False]
    assert fn.events[1].signature[0].shape == (None,)  # the cache holds what was traced
    assert (fn.traces, fn.earlier_traces) == (3, 2) and fn.traces == relaxed.experimental_get_tracing_count()
    assert [(c.path, c.kind) for c in fn.events[2].changes] == [("x", "rank")]


def test_a_variable_creating_warm_up_reads_both_traces_and_the_budget_skips_the_second() -> None:
    holder: list[Any] = []

    @tf.function
    def build(x: Any) -> Any:
        if not holder:
            holder.append(tf.Variable(1.0))
        return x * holder[0]

    build(tf.zeros([1]))
    assert build.experimental_get_tracing_count() == 2
    with tfretrace.budget(build, max_traces=1), pytest.raises(tfretrace.RetraceError) as info:
        build(tf.zeros([2]))
    error: Any = info.value
    assert (error.cause, error.count, error.max_traces) == ("shape-changed", 2, 1)
    assert build.experimental_get_tracing_count() == 2  # refused: TensorFlow never traced
    with watch() as mon:
        build(tf.zeros([3]))
    fn = mon.session().function("build")
    assert flags(fn) == [
        ("first-trace", True, True), ("variable-creation", True, True), ("shape-changed", False, False),
    ]
    assert (fn.traces, fn.earlier_traces, fn.retraces) == (3, 2, 1)


def test_warm_up_then_budget_same_shape_passes_new_shape_refused_with_its_cause() -> None:
    @tf.function
    def step(x: Any) -> Any:
        return x * 2.0

    step(tf.zeros([8]))
    with tfretrace.budget(step, max_traces=1) as block:
        step(tf.zeros([8]))  # matches the warm trace: no trace, nothing to refuse
        with pytest.raises(tfretrace.RetraceError) as info:
            step(tf.zeros([9]))
    error: Any = info.value
    assert (error.cause, error.count, error.max_traces) == ("shape-changed", 2, 1)
    assert [(c.path, c.before, c.after) for c in error.event.changes] == [("x", "(8,)", "(9,)")]
    assert "1 of the counted traces were made before this budget met the function" in str(error)
    assert block.count == 1 and block.violation_count == 1
    assert step.experimental_get_tracing_count() == 1
    # max_traces=0 after the warm-up: the same new shape is refused as what it is, not first-trace.
    with tfretrace.budget(step, max_traces=0), pytest.raises(tfretrace.RetraceError) as info:
        step(tf.zeros([9]))
    assert (info.value.cause, info.value.count) == ("shape-changed", 2)  # type: ignore[attr-defined]


def test_strict_mode_counts_the_warm_trace() -> None:
    @tf.function
    def strict_step(x: Any) -> Any:
        return x

    strict_step(tf.zeros([1]))
    with watch() as mon:
        strict_from_env(mon, {"TFRETRACE_STRICT": "1"})
        strict_step(tf.zeros([1]))
        with pytest.raises(tfretrace.RetraceError) as info:
            strict_step(tf.zeros([2]))
    assert (info.value.cause, info.value.count) == ("shape-changed", 2)  # type: ignore[attr-defined]
    fn = mon.session().function("strict_step")
    assert (fn.traces, fn.earlier_traces, fn.refused_traces) == (1, 1, 1)


def test_each_monitor_reads_what_it_did_not_see_and_objects_are_read_once() -> None:
    def make() -> Any:
        @tf.function
        def made(x: Any) -> Any:
            return x

        return made

    first, second = make(), make()
    first(tf.zeros([1]))
    second(tf.zeros([1]))
    with watch() as outer:
        first(tf.zeros([2]))
        with watch() as inner:
            first(tf.zeros([3]))
            second(tf.zeros([2]))
    out = outer.session().function("made")
    assert [(e.cause, e.earlier, e.object_index) for e in out.events] == [
        ("first-trace", True, 1), ("shape-changed", False, 1), ("shape-changed", False, 1),
        ("new-function-object", True, 2), ("shape-changed", False, 2),
    ]
    assert out.traces == first.experimental_get_tracing_count() + second.experimental_get_tracing_count() == 5
    # The inner monitor started after the outer one recorded two traces of first: to it they are earlier.
    inn = inner.session().function("made")
    assert [(e.cause, e.earlier) for e in inn.events] == [
        ("first-trace", True), ("shape-changed", True), ("shape-changed", False),
        ("new-function-object", True), ("shape-changed", False),
    ]
    assert (inn.traces, inn.earlier_traces) == (5, 3)


class _Opaque:
    """A cache key type whose parameters cannot be read."""

    @property
    def parameters(self) -> Any:
        raise RuntimeError("moved")


class _Cache:
    def __init__(self, primary: Any) -> None:
        self._primary = primary


class _Function:
    def __init__(self, cache: Any) -> None:
        self._function_cache = cache


@pytest.mark.parametrize(
    "function",
    [object(), _Function(None), _Function(_Cache([1, 2])), _Function(_Cache({"not a pair": 1})),
     _Function(_Cache({(None, _Opaque()): 1}))],
    ids=["no-dict", "no-cache", "not-a-mapping", "odd-key", "unreadable-type"],
)
def test_a_cache_that_cannot_be_read_reads_as_no_earlier_traces(function: Any) -> None:
    assert cached_traces(function) == ()


def test_an_unreadable_cache_leaves_todays_behaviour(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace._tf import earlier

    @tf.function
    def moved(x: Any) -> Any:
        return x

    moved(tf.zeros([1]))
    # A TensorFlow whose cache is elsewhere: the reader finds nothing, the monitor works as before.
    monkeypatch.setattr(earlier, "cached_traces", lambda function: ())
    with watch() as mon:
        moved(tf.zeros([2]))
    fn = mon.session().function("moved")
    assert flags(fn) == [("first-trace", False, True)] and (fn.traces, fn.earlier_traces) == (1, 0)
    assert mon.internal_errors == 0


MARKER_TESTS = """
import pytest
import tensorflow as tf

@tf.function
def step(x):
    return x * 2.0

step(tf.zeros([4]))  # warmed at import, before any monitor

@pytest.mark.max_traces(0, "step")
def test_new_shape_refused():
    step(tf.zeros([4]))  # the warm trace: cached
    step(tf.zeros([5]))

@pytest.mark.max_traces(1, "step")
def test_the_body_counts_its_own_traces():
    step(tf.zeros([6]))
"""


def test_pytest_marker_after_a_warm_up_refuses_with_the_real_cause(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyfile(test_warm=MARKER_TESTS)
    result = pytester.runpytest_subprocess("--tfretrace-summary", "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*budget exceeded: step (test_warm.py:*) would trace a 1st time, cause shape-changed*",
            "*x: shape (4,) -> (5,), dim 0*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "test_warm.py::test_new_shape_refused",
            "  step (test_warm.py:*): traces=0 causes= earlier=1 refused=shape-changed",
            "test_warm.py::test_the_body_counts_its_own_traces",
            "  step (test_warm.py:*): traces=1 causes=shape-changed earlier=1",
        ]
    )
