"""The runtime monitor against real TensorFlow: every cause, leaf paths, counts equal to TF's."""

from __future__ import annotations

import typing
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import tfretrace  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402

pytestmark = pytest.mark.tf


def report(session: tfretrace.Session, name: str) -> FunctionReport:
    return session.function(name)


def causes(fn: FunctionReport) -> list[str]:
    return [e.cause for e in fn.events]


def paths(fn: FunctionReport, index: int) -> list[tuple[str, str]]:
    return [(c.path, c.kind) for c in fn.events[index - 1].changes]


def watch() -> typing.ContextManager[tfretrace.Monitor]:
    return tfretrace.watch(warn=False, log=False)


def test_shape_change_names_the_argument_and_dimension() -> None:
    @tf.function
    def shape_fn(x: tf.Tensor) -> tf.Tensor:
        return x * 2

    with watch() as mon:
        shape_fn(tf.ones([10, 20]))
        shape_fn(tf.ones([10, 20]))
        shape_fn(tf.ones([10, 21]))
    fn = report(mon.session(), "shape_fn")
    assert causes(fn) == ["first-trace", "shape-changed"]
    change = fn.events[1].changes[0]
    assert (change.path, change.kind, change.before, change.after, change.detail) == (
        "x",
        "shape",
        "(10, 20)",
        "(10, 21)",
        "dim 1",
    )
    assert fn.traces == shape_fn.experimental_get_tracing_count() == 2
    assert fn.calls == 3
    assert fn.events[1].calls_since_previous == 2
    assert fn.events[1].fix is not None and "tf.TensorSpec(shape=[None, None], dtype=tf.float32)" in fn.events[1].fix


def test_rank_and_dtype_changes() -> None:
    @tf.function
    def rank_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    with watch() as mon:
        rank_fn(tf.ones([3]))
        rank_fn(tf.ones([3, 2]))
        rank_fn(np.ones([3, 2]))  # NumPy defaults to float64
    fn = report(mon.session(), "rank_fn")
    assert causes(fn) == ["first-trace", "shape-changed", "dtype-changed"]
    assert paths(fn, 2) == [("x", "rank")]
    assert paths(fn, 3) == [("x", "dtype")]
    assert fn.traces == rank_fn.experimental_get_tracing_count() == 3


def test_python_values_including_kwargs_and_equal_literals() -> None:
    @tf.function
    def value_fn(x: tf.Tensor, *, lr: float, training: bool = False) -> tf.Tensor:
        return x * lr

    x = tf.ones([2])
    with watch() as mon:
        value_fn(x, lr=0.01)
        value_fn(x, lr=0.009)
        value_fn(x, lr=0.009, training=True)
        value_fn(x, lr=0.009, training=1)  # 1 == True: TensorFlow up to 2.21 reuses the True trace
    fn = report(mon.session(), "value_fn")
    # The 2.23 nightly keys Python literals by type as well: 1 then traces once more.
    by_type = value_fn.experimental_get_tracing_count() == 4
    if tuple(int(p) for p in tf.__version__.split(".")[:2]) <= (2, 21):
        assert not by_type
    assert causes(fn) == ["first-trace"] + ["python-value-changed"] * (3 if by_type else 2)
    assert paths(fn, 2) == [("lr", "python-value")]
    assert paths(fn, 3) == [("training", "python-value")]
    assert fn.traces == value_fn.experimental_get_tracing_count() == (4 if by_type else 3)
    assert fn.calls == 4
    # The fix plan's replay of TF's cache rules, over the recorded calls, gives TF's count on
    # either rule (the leaves say which one recorded them).
    from tfretrace.fix.core.predict import Config, calls_of, count

    assert count(calls_of(fn), Config()) == value_fn.experimental_get_tracing_count()


def test_nested_dicts_and_lists() -> None:
    @tf.function
    def nested_fn(batch: dict[str, typing.Any]) -> tf.Tensor:
        return batch["image"]

    with watch() as mon:
        nested_fn({"image": tf.ones([2, 3]), "meta": [tf.ones([4]), 1]})
        nested_fn({"image": tf.ones([2, 3]), "meta": [tf.ones([5]), 1]})
        nested_fn({"image": tf.ones([2, 3]), "meta": [tf.ones([5]), 1, 2]})
        nested_fn({"image": tf.ones([2, 3]), "extra": 0, "meta": [tf.ones([5]), 1]})
        nested_fn({"image": tf.ones([2, 3], tf.float64), "meta": [tf.ones([5]), 1]})
    fn = report(mon.session(), "nested_fn")
    assert causes(fn) == [
        "first-trace",
        "shape-changed",
        "structure-changed",
        "structure-changed",
        "dtype-changed",
    ]
    assert paths(fn, 2) == [("batch['meta'][0]", "shape")]
    assert paths(fn, 3) == [("batch['meta']", "structure")]
    assert paths(fn, 4) == [("batch", "structure")]
    assert paths(fn, 5) == [("batch['image']", "dtype")]
    assert fn.traces == nested_fn.experimental_get_tracing_count()


def test_positional_varargs_paths_and_tensor_vs_python_leaf() -> None:
    @tf.function
    def varargs_fn(*args: typing.Any) -> typing.Any:
        return args[0]

    with watch() as mon:
        varargs_fn(tf.ones([2]), (1, tf.ones([3])))
        varargs_fn(tf.ones([2]), (tf.constant(1), tf.ones([3])))
    fn = report(mon.session(), "varargs_fn")
    assert causes(fn) == ["first-trace", "structure-changed"]
    (change,) = fn.events[1].changes
    assert change.kind == "leaf-kind"
    assert change.path.endswith("[0]") and change.path.startswith("args")


def test_object_identity_and_namedtuple_by_value() -> None:
    class Config:
        def __init__(self, scale: float) -> None:
            self.scale = scale

    class Frozen(typing.NamedTuple):
        scale: float

    @tf.function
    def obj_fn(x: tf.Tensor, cfg: typing.Any) -> tf.Tensor:
        return x * cfg.scale

    x = tf.ones([2])
    keep = Config(2.0)
    with watch() as mon:
        obj_fn(x, keep)
        obj_fn(x, keep)
        obj_fn(x, Config(2.0))  # equal fields, new object: identity
        obj_fn(x, Frozen(2.0))
        obj_fn(x, Frozen(2.0))  # namedtuples compare by value: no retrace
    fn = report(mon.session(), "obj_fn")
    assert causes(fn) == ["first-trace", "object-identity", "structure-changed"]
    assert paths(fn, 2) == [("cfg", "identity")]
    assert fn.traces == obj_fn.experimental_get_tracing_count() == 3


def test_new_function_object_in_a_loop_is_one_function() -> None:
    def body(x: tf.Tensor) -> tf.Tensor:
        return x + 1

    with watch() as mon:
        for _ in range(4):
            tf.function(body)(tf.ones([2]))
    fn = report(mon.session(), "body")
    assert causes(fn) == ["first-trace"] + ["new-function-object"] * 3
    assert fn.objects == 4 and fn.traces == 4
    assert all(not e.changes for e in fn.events[1:])  # identical signatures
    assert fn.events[3].object_index == 4


def test_methods_per_instance_and_via_class() -> None:
    class Scaler(tf.Module):
        def __init__(self, k: float) -> None:
            super().__init__()
            self.k = k

        @tf.function
        def __call__(self, x: tf.Tensor) -> tf.Tensor:
            return x * self.k

    a, b = Scaler(2.0), Scaler(3.0)
    with watch() as mon:
        a(tf.ones([2]))
        a(tf.ones([3]))
        b(tf.ones([2]))
    fn = report(mon.session(), "Scaler.__call__")
    assert causes(fn) == ["first-trace", "shape-changed", "new-function-object"]
    assert fn.objects == 2
    assert fn.traces == a.__call__.experimental_get_tracing_count() + b.__call__.experimental_get_tracing_count()


def test_variable_creation_trace_is_expected_and_counted() -> None:
    class Lazy(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w: tf.Variable | None = None

        @tf.function
        def __call__(self, x: tf.Tensor) -> tf.Tensor:
            if self.w is None:
                self.w = tf.Variable(2.0)
            return x * self.w

    lazy = Lazy()
    with watch() as mon:
        lazy(tf.ones([2]))
        lazy(tf.ones([2]))
    fn = report(mon.session(), "Lazy.__call__")
    assert causes(fn) == ["first-trace", "variable-creation"]
    assert fn.retraces == 0
    assert paths(fn, 2) == [("<context>.scope_type", "context")]
    assert fn.traces == lazy.__call__.experimental_get_tracing_count() == 2


def test_variables_as_arguments_and_aliasing() -> None:
    v1, v2 = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])

    @tf.function
    def var_fn(a: tf.Variable, b: tf.Variable) -> tf.Tensor:
        return a + b

    with watch() as mon:
        var_fn(v1, v2)
        var_fn(v2, v1)  # same specs: no retrace
        var_fn(v1, v1)  # aliasing changes the key
    fn = report(mon.session(), "var_fn")
    assert causes(fn) == ["first-trace", "variable-spec-changed"]
    assert paths(fn, 2) == [("b", "variable")]
    assert fn.traces == var_fn.experimental_get_tracing_count() == 2


def test_context_change_eager_vs_graph_and_nested_calls() -> None:
    @tf.function
    def ctx_fn(x: tf.Tensor) -> tf.Tensor:
        return x + 1

    @tf.function
    def outer(x: tf.Tensor) -> tf.Tensor:
        return ctx_fn(x)

    with watch() as mon:
        ctx_fn(tf.ones([2]))
        outer(tf.ones([2]))  # nested in another graph: same context in TF 2.21, no retrace
        with tf.Graph().as_default():
            ctx_fn(tf.ones([2]))  # a legacy graph context is part of the key
    fn = report(mon.session(), "ctx_fn")
    assert causes(fn) == ["first-trace", "context-changed"]
    assert paths(fn, 2) == [("<context>.graph", "context")]
    assert fn.traces == ctx_fn.experimental_get_tracing_count() == 2
    assert report(mon.session(), "outer").traces == 1


def test_reduce_retracing_records_the_generalized_trace() -> None:
    @tf.function(reduce_retracing=True)
    def rr_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    with watch() as mon:
        for n in (3, 4, 5, 6):
            rr_fn(tf.ones([n]))
    fn = report(mon.session(), "rr_fn")
    assert causes(fn) == ["first-trace", "shape-changed"]
    traced = fn.events[1].traced_as
    assert traced is not None and traced[0].shape == (None,)
    assert fn.traces == rr_fn.experimental_get_tracing_count() == 2


def test_input_signature_trace_never_retraces_and_get_concrete_function_counts() -> None:
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def sig_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    @tf.function
    def gcf_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    with watch() as mon:
        for n in (3, 7, 9):
            sig_fn(tf.ones([n]))
        gcf_fn.get_concrete_function(tf.TensorSpec([None], tf.float32))
        gcf_fn(tf.ones([4]))  # dispatches to the (None,) trace
    session = mon.session()
    assert report(session, "sig_fn").traces == 1
    assert report(session, "gcf_fn").traces == gcf_fn.experimental_get_tracing_count() == 1


def test_no_retrace_for_the_article_myths() -> None:
    """AutoGraph `if` on a tensor, random.random() inside, a changed global: no retrace, none reported."""
    import random

    state = {"scale": 1.0}

    @tf.function
    def myth_fn(x: tf.Tensor) -> tf.Tensor:
        if tf.reduce_sum(x) > 0:  # AutoGraph: a graph conditional  # noqa: SIM108
            y = x * random.random()
        else:
            y = x * state["scale"]
        return y

    with watch() as mon:
        for value in (1.0, -1.0, 2.0, -3.0):
            state["scale"] = value
            myth_fn(tf.constant([value]))
    fn = report(mon.session(), "myth_fn")
    assert fn.traces == myth_fn.experimental_get_tracing_count() == 1
    assert fn.retraces == 0 and fn.calls == 4


def test_failed_traces_are_not_counted_as_traces() -> None:
    @tf.function
    def fail_fn(x: tf.Tensor, mode: str) -> tf.Tensor:
        if mode == "bad":
            raise ValueError("bad mode")
        return x

    with watch() as mon:
        fail_fn(tf.ones([2]), "ok")
        with pytest.raises(ValueError):
            fail_fn(tf.ones([2]), "bad")
    fn = report(mon.session(), "fail_fn")
    assert fn.traces == fail_fn.experimental_get_tracing_count() == 1
    assert fn.failed_traces == 1


def test_ties_are_reported() -> None:
    @tf.function
    def tie_fn(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return x

    with watch() as mon:
        tie_fn(tf.ones([1]), tf.ones([2]))
        tie_fn(tf.ones([2]), tf.ones([1]))
        tie_fn(tf.ones([2]), tf.ones([2]))  # one leaf away from both earlier traces
    fn = report(mon.session(), "tie_fn")
    assert sorted(fn.events[2].closest) == [1, 2]
    assert len(fn.events[2].changes) == 1


def test_warning_category_logger_and_call_site() -> None:
    @tf.function
    def warn_fn(n: int) -> int:
        return n

    with warnings.catch_warnings(record=True) as caught, tfretrace.watch(log=False):
        warnings.simplefilter("always")
        warn_fn(1)
        warn_fn(2)
    ours = [w for w in caught if issubclass(w.category, tfretrace.RetracingWarning)]
    assert len(ours) == 1
    assert ours[0].filename.endswith("test_monitor.py")

    with pytest.warns(tfretrace.RetracingWarning), tfretrace.watch(log=False):
        warn_fn(3)
        warn_fn(4)

    with warnings.catch_warnings():
        warnings.simplefilter("error", tfretrace.RetracingWarning)
        with tfretrace.watch(log=False), pytest.raises(tfretrace.RetracingWarning):
            warn_fn(5)
            warn_fn(6)


def test_logger_receives_retraces(caplog: pytest.LogCaptureFixture) -> None:
    @tf.function
    def log_fn(n: int) -> int:
        return n

    with caplog.at_level("INFO", logger="tfretrace"), tfretrace.watch(warn=False):
        log_fn(1)
        log_fn(2)
    records = [r for r in caplog.records if r.name == "tfretrace"]
    assert len(records) == 1


def test_install_stop_and_functions_created_before_activation() -> None:
    @tf.function
    def early_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    early_fn(tf.ones([1]))  # traced before monitoring: read from TensorFlow's cache
    monitor = tfretrace.install(warn=False, log=False)
    assert tfretrace.install() is monitor and tfretrace.current() is monitor
    early_fn(tf.ones([2]))
    session = tfretrace.stop()
    assert tfretrace.current() is None
    fn = report(session, "early_fn")
    # Traces count as TensorFlow counts them; calls only those the monitor saw.
    assert (fn.traces, fn.earlier_traces, fn.retraces, fn.calls) == (2, 1, 1, 1)
    assert fn.traces == early_fn.experimental_get_tracing_count()
    assert [(e.cause, e.earlier) for e in fn.events] == [("first-trace", True), ("shape-changed", False)]


def test_a_pinned_monitor_serves_every_install_stop_cycle() -> None:
    # Under `tfretrace run` the monitor is pinned: the program's install()/stop() cycles, the
    # second one included, all get the run's monitor, which goes on recording.
    @tf.function
    def cycled_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    monitor = tfretrace.install(warn=False, log=False)
    monitor.pinned = True
    try:
        assert tfretrace.install() is monitor
        cycled_fn(tf.ones([1]))
        assert report(tfretrace.stop(), "cycled_fn").traces == 1
        assert tfretrace.install() is monitor and monitor.active
        cycled_fn(tf.ones([2]))
        assert report(tfretrace.stop(), "cycled_fn").traces == 2
        assert monitor.active and tfretrace.current() is monitor
    finally:
        monitor.pinned = False
        tfretrace.stop()
    assert tfretrace.current() is None and not monitor.active
    assert cycled_fn.experimental_get_tracing_count() == 2


def test_session_json_round_trip(tmp_path: typing.Any) -> None:
    @tf.function
    def json_fn(x: tf.Tensor) -> tf.Tensor:
        return x

    with watch() as mon:
        json_fn(tf.ones([1]))
        json_fn(tf.ones([2]))
    path = mon.save(str(tmp_path / "s.json"))
    loaded = tfretrace.load(path)
    data = loaded.to_dict()
    assert data["schema"] == 1 and data["tool"]["name"] == "tfretrace"
    assert data["tensorflow"] == tf.__version__
    (fn,) = [f for f in data["functions"] if f["name"].endswith("json_fn")]
    assert [e["cause"] for e in fn["events"]] == ["first-trace", "shape-changed"]
    assert fn["events"][1]["changes"][0]["path"] == "x"
    assert set(fn) >= {"name", "location", "calls", "traces", "trace_seconds", "objects", "keras", "events"}
    assert set(fn["events"][1]) >= {"index", "cause", "seconds", "call_site", "signature", "changes", "fix"}


class _Records(__import__("logging").Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: typing.Any) -> None:
        self.messages.append(record.getMessage())


def test_tensorflow_retracing_warning_is_hidden_exactly_while_monitoring() -> None:
    import logging

    def storm() -> int:
        # A new code object each time (TensorFlow warns at most twice per equal __code__).
        phases.append(len(phases))
        scope: dict[str, typing.Any] = {"tf": tf}
        exec(f"def storm_fn(x):\n    return tf.constant(x) + {phases[-1]}\n", scope)
        storm_fn = tf.function(scope["storm_fn"])
        for i in range(8):  # TensorFlow warns from the 5th trace in a short window
            storm_fn(i)
        logging.getLogger("tensorflow").warning("some other TensorFlow warning")
        return sum("triggered tf.function retracing" in m for m in handler.messages)

    phases: list[int] = []
    handler = _Records()
    logging.getLogger("tensorflow").addHandler(handler)
    try:
        with watch():
            assert storm() == 0
        assert "some other TensorFlow warning" in handler.messages  # nothing else is hidden
        with tfretrace.watch(warn=False, log=False, keep_tf_warning=True):
            kept = storm()
        assert kept > 0
        handler.messages.clear()
        assert storm() > 0  # no monitor: TensorFlow's warning is back
    finally:
        logging.getLogger("tensorflow").removeHandler(handler)
    assert not any(f.__class__.__name__ == "TFRetracingFilter" for f in logging.getLogger("tensorflow").filters)
