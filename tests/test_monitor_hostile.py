"""Hostile use of the monitor and budgets on real TensorFlow: counts, causes and user code."""

from __future__ import annotations

import copy
import functools
import importlib
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import tfretrace
from tfretrace.records.errors import RetraceError

pytestmark = pytest.mark.tf
budget_module = importlib.import_module("tfretrace.budget")
hub_module = importlib.import_module("tfretrace.budget.decorator")  # where the shared monitor hub lives


@pytest.fixture(scope="module")
def tf() -> Any:
    return pytest.importorskip("tensorflow")


@pytest.fixture
def fresh_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The budget hub as a new process has it: no monitor started yet."""
    hub = hub_module._Hub()
    monkeypatch.setattr(hub_module, "_hub", hub)
    yield hub
    if hub.monitor is not None:
        hub.monitor.stop()


def test_the_first_block_of_a_process_counts_each_trace_once(tf: Any, fresh_hub: Any) -> None:
    @tf.function
    def f(x: Any) -> Any:
        return x + 1

    with tfretrace.budget(f, max_traces=2) as block:
        f(tf.zeros([1]))
        f(tf.zeros([2]))  # the second of two allowed traces
        assert block.count == 2
    with pytest.raises(RetraceError), tfretrace.budget(f, max_traces=2):
        f(tf.zeros([3]))
        f(tf.zeros([4]))
        f(tf.zeros([5]))


def test_a_block_counts_only_its_own_threads_traces(tf: Any, fresh_hub: Any) -> None:
    @tf.function
    def f(x: Any) -> Any:
        return x * 2

    errors: list[BaseException] = []

    def background() -> None:
        try:
            for n in range(1, 4):
                f(tf.zeros([n]))
        except BaseException as exc:
            errors.append(exc)

    with tfretrace.budget(max_traces=1) as block:
        thread = threading.Thread(target=background)
        thread.start()
        thread.join()
        f(tf.zeros([7]))
    assert errors == [] and block.count == 1


def test_warn_only_budget_keeps_few_errors_and_exact_counts(tf: Any, fresh_hub: Any) -> None:
    @tf.function
    def f(x: Any) -> Any:
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tfretrace.budget(f, max_traces=1, warn_only=True) as block:
            for n in range(1, 62):
                f(tf.zeros([n]))
    assert block.count == 61 and block.violation_count == 60
    assert len(block.violations) == budget_module.KEPT_VIOLATIONS
    assert block._limit.refused == {(f.python_function.__qualname__, "shape-changed"): 60}


def test_retrace_callback_counts_retraces_beyond_the_kept_history(tf: Any) -> None:
    from tfretrace.keras import RetraceCallback
    from tfretrace.runtime.monitor import Monitor

    @tf.function
    def step(x: Any) -> Any:
        return x

    callback = RetraceCallback(max_retraces=80)
    callback.monitor = Monitor(warn=False, log=False, max_events=60)  # history shorter than the run
    callback.on_train_begin()
    for n in range(1, 71):  # 69 retraces: within budget
        step(tf.zeros([n]))
    callback.on_epoch_end(0)
    for n in range(71, 101):  # 30 more: 99 in all, over budget, though only 59 events are kept
        step(tf.zeros([n]))
    with pytest.raises(RetraceError, match="99 retraces > max_retraces=80"):
        callback.on_epoch_end(1)
    assert callback.epoch_retraces == [69, 30]
    report = callback.session().function("step")
    assert report.retraces == 99 and report.traces == 100 and len(report.events) == 60
    assert tfretrace.Session.from_dict(callback.session().to_dict()).function("step").retraces == 99


def test_partials_and_callable_objects_are_grouped_by_their_real_code(tf: Any) -> None:
    def add(x: Any, a: int) -> Any:
        return x + a

    def mul(x: Any, b: int) -> Any:
        return x * b

    class Scale:
        def __call__(self, x: Any) -> Any:
            return x * 3

    functions = [tf.function(functools.partial(add, a=1)), tf.function(functools.partial(mul, b=2)),
                 tf.function(Scale())]
    with tfretrace.watch(warn=False) as monitor:
        for f in functions:
            f(tf.zeros([1]))
    session = monitor.session()
    names = sorted(f.name for f in session.functions)
    # A partial's row is named by its code and the literal values it binds (two partials of one
    # function with other values are two functions).
    assert names == sorted([f"partial({add.__qualname__}, a=1)", f"partial({mul.__qualname__}, b=2)",
                            Scale.__call__.__qualname__])
    assert all(f.location != "<unknown>" and f.retraces == 0 for f in session.functions)


def test_strict_mode_does_not_stop_partials_of_different_functions(tmp_path: Any) -> None:
    import subprocess
    import sys

    program = tmp_path / "p.py"
    program.write_text(
        "import functools, tensorflow as tf, tfretrace\n"
        "tfretrace.install()\n"
        "def a(x, k): return x + k\n"
        "def b(x, k): return x - k\n"
        "tf.function(functools.partial(a, k=1))(tf.zeros([1]))\n"
        "tf.function(functools.partial(b, k=1))(tf.zeros([1]))\n"
        "print('done')\n"
    )
    env = {**__import__("os").environ, "TFRETRACE_STRICT": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                            env=env, timeout=300, check=False)
    assert result.returncode == 0 and "done" in result.stdout, result.stderr[-2000:]


def test_ties_go_to_the_earlier_trace_whose_difference_is_new(tf: Any) -> None:
    @tf.function
    def f(x: Any) -> Any:
        return x

    with tfretrace.watch(warn=False) as monitor:
        f(tf.zeros([2]))
        f(tf.zeros([2], tf.int32))
        f(tf.zeros([3]))
    third = monitor.session().function("f").events[2]
    assert third.cause == "shape-changed" and third.closest[0] == 1
    assert [c.kind for c in third.changes] == ["shape"]


def test_long_python_values_and_new_tensor_arrays_are_explained(tf: Any) -> None:
    @tf.function
    def load(path: str, x: Any) -> Any:
        return x

    @tf.function
    def stack(ta: Any) -> Any:
        return ta.stack()

    folder = "/data/experiments/" + "a-very-long-folder-name/" * 4
    with tfretrace.watch(warn=False) as monitor:
        load(folder + "ckpt-0001", tf.zeros([1]))
        load(folder + "ckpt-0002", tf.zeros([1]))
        for _ in range(2):
            stack(tf.TensorArray(tf.float32, size=1).write(0, 1.0))
    session = monitor.session()
    second = session.function("load").events[1]
    assert second.cause == "python-value-changed" and [c.path for c in second.changes] == ["path"]
    assert "ckpt-0001" in second.changes[0].before and "ckpt-0002" in second.changes[0].after
    assert session.function("stack").events[1].cause == "object-identity"


def test_composite_dtype_and_extension_type_field_shape_changes(tf: Any) -> None:
    # Real annotation objects: this module's postponed annotations could not be resolved.
    annotations = {"values": tf.Tensor, "mask": tf.Tensor}
    Masked = type("Masked", (tf.experimental.ExtensionType,), {"__annotations__": annotations})

    @tf.function
    def ragged(x: Any) -> Any:
        return x

    @tf.function
    def sparse(x: Any) -> Any:
        return x

    @tf.function(reduce_retracing=True)
    def masked(m: Any) -> Any:
        return m.values

    with tfretrace.watch(warn=False) as monitor:
        ragged(tf.ragged.constant([[1.0], [2.0, 3.0]]))
        ragged(tf.ragged.constant([[1], [2, 3]]))
        sparse(tf.sparse.from_dense(tf.zeros([2, 2])))
        sparse(tf.sparse.from_dense(tf.zeros([2, 2], tf.int32)))
        for n in (2, 3, 4):
            masked(Masked(tf.zeros([n]), tf.zeros([n], tf.bool)))
    session = monitor.session()
    assert session.function("ragged").events[1].cause == "dtype-changed"
    assert session.function("sparse").events[1].cause == "dtype-changed"
    masked_report = session.function("masked")
    assert [e.cause for e in masked_report.events] == ["first-trace", "shape-changed"]
    assert masked.experimental_get_tracing_count() == 2  # reduce_retracing generalized the third
    assert {c.path for c in masked_report.events[1].changes} == {"m.values", "m.mask"}


def test_recursive_function_traces_inside_its_first_trace_are_retraces(tf: Any) -> None:
    @tf.function
    def fact(n: int) -> Any:
        if n <= 1:
            return tf.constant(1)
        return n * fact(n - 1)

    with tfretrace.watch(warn=False) as monitor:
        assert int(fact(5)) == 120
    report = monitor.session().function("fact")
    assert report.traces == fact.experimental_get_tracing_count() == 5
    assert [e.index for e in report.events] == [1, 2, 3, 4, 5]
    assert [e.cause for e in report.events] == ["first-trace"] + ["python-value-changed"] * 4
    assert report.retraces == 4


def test_call_counts_are_exact_across_monitors_and_copies(tf: Any) -> None:
    h = tf.function(lambda x: x + 1)
    with tfretrace.watch(warn=False):
        h(tf.zeros([1]))
    with tfretrace.watch(warn=False) as second:
        for _ in range(10):
            h(tf.zeros([1]))
        h(tf.zeros([2]))
    # The trace made under the first monitor is an earlier one to the second: traces count as
    # TensorFlow's own count does, calls only those the second monitor saw.
    assert [(f.calls, f.traces, f.earlier_traces) for f in second.session().functions] == [(11, 2, 1)]

    k = tf.function(lambda x: x * 5)
    with tfretrace.watch(warn=False) as monitor:
        k(tf.zeros([1]))
        k2 = copy.copy(k)
        for _ in range(5):
            k(tf.zeros([1]))
            k2(tf.zeros([1]))
        k2(tf.zeros([3]))
    report = monitor.session().functions[0]
    assert (report.calls, report.traces) == (12, k.experimental_get_tracing_count())
    assert [e.cause for e in report.events] == ["first-trace", "shape-changed"]


class _Watched:
    """An argument keyed by identity whose class has a property that must never run."""

    reads = 0

    @property
    def name(self) -> str:
        type(self).reads += 1
        return "ran user code"


def test_the_monitor_runs_no_user_code_and_survives_hostile_types(tf: Any) -> None:
    from tensorflow.types.experimental import TraceType

    class Hostile(TraceType):  # type: ignore[misc]
        def __init__(self, key: int) -> None:
            self.key = key

        def is_subtype_of(self, other: Any) -> bool:
            return self == other

        def most_specific_common_supertype(self, others: Any) -> Any:
            return self if all(self == o for o in others) else None

        def placeholder_value(self, context: Any) -> Any:
            return self.key

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Hostile) and other.key == self.key

        def __hash__(self) -> int:
            return hash(self.key)

        def __repr__(self) -> str:
            raise RuntimeError("hostile repr")

        @property
        def shape(self) -> Any:
            raise RuntimeError("hostile property")

    class Arg:
        def __init__(self, key: int) -> None:
            self.key = key

        def __tf_tracing_type__(self, context: Any) -> Hostile:
            return Hostile(self.key)

    @tf.function
    def f(x: Any, arg: Any) -> Any:
        return x

    @tf.function
    def g(d: Any) -> Any:
        return d

    watched = [_Watched(), _Watched()]
    nan1, nan2 = float("nan"), float("nan")
    with tfretrace.watch(warn=False) as monitor:
        f(tf.zeros([1]), Arg(1))
        f(tf.zeros([1]), Arg(2))
        for item in watched:
            f(tf.zeros([1]), item)
        g({nan1: 1, nan2: 2})
        g({nan1: 1, nan2: 3})
    session = monitor.session()
    assert _Watched.reads == 0
    assert session.internal_errors == 0, session.internal_error_messages
    assert session.function("f").traces == f.experimental_get_tracing_count() == 4
    assert session.function("g").traces == g.experimental_get_tracing_count() == 2
    assert session.function("g").events[1].cause == "python-value-changed"


def _our_frames(exc: BaseException) -> list[str]:
    import os
    import traceback

    package = os.path.dirname(tfretrace.__file__) + os.sep
    return [f.filename for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(package)]


def test_errors_raised_in_a_trace_show_no_tfretrace_frames(tf: Any, fresh_hub: Any) -> None:
    @tf.function
    def broken(x: Any) -> Any:
        raise ValueError("bad trace")

    @tf.function
    def step(x: Any) -> Any:
        return x

    with tfretrace.watch(warn=False):
        with pytest.raises(ValueError, match="bad trace") as info:
            broken(tf.zeros([1]))
        assert _our_frames(info.value) == []
        with tfretrace.budget(step, max_traces=1), pytest.raises(RetraceError) as refused:
            step(tf.zeros([1]))
            step(tf.zeros([2]))
    # TensorFlow's filter keeps the innermost frame when every frame is hidden: the raise itself.
    assert len(_our_frames(refused.value)) <= 1


def test_retrace_callback_checks_save_to_up_front_and_never_crashes_saving(tf: Any, tmp_path: Any,
                                                                            caplog: Any) -> None:
    from tfretrace.keras import RetraceCallback

    with pytest.raises(ValueError, match="does not exist"):
        RetraceCallback(save_to=str(tmp_path / "missing" / "s.json"))
    with pytest.raises(ValueError, match="is a folder"):
        RetraceCallback(save_to=str(tmp_path))
    target = tmp_path / "later" / "s.json"
    target.parent.mkdir()
    callback = RetraceCallback(save_to=str(target))
    target.parent.rmdir()  # gone by the end of training
    callback.on_train_begin()
    callback.on_train_end()
    assert "could not save the session" in caplog.text
