"""Hand-built sessions for renderer and CLI tests: no TensorFlow, every field exercised."""

from __future__ import annotations

from collections.abc import Callable

from tfretrace.records.events import Change, KerasInfo, Leaf, TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session

HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_REPR = '"><img src=x onerror=alert(1)>'
HOSTILE_MARKUP = "[bold red]not markup[/]"
# The browser test checks these globals stay unset: they are what the payloads would set.
HOSTILE_JS_NAME = "<script>window.__pwned=1;document.title='pwned'</script>"
HOSTILE_JS_REPR = "\"><img src=x onerror=\"window.__pwned=2;document.title='pwned'\">"

SHAPE_FIX = (
    "@tf.function(input_signature=[tf.TensorSpec([8, None], tf.float32)])\n"
    "def train_step(x):\n    ..."
)
VALUE_FIX = "train_step(x, tf.constant(epoch))"


def tensor(path: str, *shape: int | None, dtype: str = "float32") -> Leaf:
    """A tensor leaf."""
    return Leaf(path, "tensor", dtype=dtype, shape=tuple(shape))


def python(path: str, value: object) -> Leaf:
    """A Python literal leaf."""
    return Leaf(path, "python", value=repr(value), type_name=type(value).__name__)


def event(
    index: int,
    cause: str,
    *,
    time: float,
    calls_total: int,
    changes: tuple[Change, ...] = (),
    fix: str | None = None,
    seconds: float = 0.012,
    signature: tuple[Leaf, ...] = (),
    **extra: object,
) -> TraceEvent:
    """One trace event with sensible defaults."""
    return TraceEvent(
        index=index,
        cause=cause,
        seconds=seconds,
        time=time,
        call_site="train.py:41",
        signature=signature or (tensor("x", 8, 10),),
        changes=changes,
        fix=fix,
        calls_since_previous=None if index == 1 else 1,
        calls_total=calls_total,
        **extra,  # type: ignore[arg-type]
    )


def storm(n: int = 120, name: str = "train_step") -> FunctionReport:
    """A shape-changed retrace storm: every call traces."""
    events = [event(1, "first-trace", time=0.5, calls_total=1, seconds=0.2)]
    for i in range(2, n + 1):
        change = Change("x", "shape", f"(8, {8 + i})", f"(8, {9 + i})", "dim 1")
        events.append(
            event(i, "shape-changed", time=0.5 + i * 0.05, calls_total=i, changes=(change,),
                  fix=SHAPE_FIX, signature=(tensor("x", 8, 9 + i),))
        )
    return FunctionReport(
        name=name,
        location="train.py:12",
        calls=n + 5,
        traces=n,
        trace_seconds=sum(e.seconds for e in events),
        objects=1,
        events=tuple(events),
    )


def healthy(name: str = "eval_step", location: str = "train.py:30") -> FunctionReport:
    """Traced once, called often."""
    return FunctionReport(
        name=name,
        location=location,
        calls=400,
        traces=1,
        trace_seconds=0.15,
        objects=1,
        events=(event(1, "first-trace", time=1.0, calls_total=1, seconds=0.15),),
    )


def epochs() -> FunctionReport:
    """A Python epoch number passed as an argument, with a tie and a variable-creation trace."""
    events = [
        event(1, "first-trace", time=0.2, calls_total=1, signature=(python("epoch", 0),)),
        event(2, "variable-creation", time=0.3, calls_total=1),
    ]
    for i in range(3, 7):
        events.append(
            event(i, "python-value-changed", time=i * 1.0, calls_total=i * 50,
                  changes=(Change("epoch", "python-value", str(i - 3), str(i - 2)),),
                  fix=VALUE_FIX, closest=(1, 2) if i == 3 else (i - 1,),
                  note="1, 1.0 and True count as equal")
        )
    return FunctionReport(
        name="Trainer.step",
        location="trainer.py:88",
        calls=300,
        traces=6,
        trace_seconds=0.6,
        objects=2,
        events=tuple(events),
        failed_traces=1,
        dropped_events=0,
    )


def keras_predict() -> FunctionReport:
    """A Keras predict function traced again for each new model."""
    events = [event(1, "first-trace", time=2.0, calls_total=1, seconds=0.4)]
    for i in range(2, 5):
        events.append(
            event(i, "keras-new-model", time=2.0 + i, calls_total=i, seconds=0.4, object_index=i,
                  note="model built at app.py:40")
        )
    return FunctionReport(
        name="one_step_on_data_distributed",
        location="keras/src/backend/tensorflow/trainer.py:219",
        calls=4,
        traces=4,
        trace_seconds=1.6,
        objects=4,
        events=tuple(events),
        keras=KerasInfo("encoder", "Functional", "predict", "app.py:40"),
    )


def hostile() -> FunctionReport:
    """Names and reprs that would run script if a renderer forgot to escape them."""
    leaf = Leaf("cfg", "object", value=HOSTILE_REPR, type_name=HOSTILE_NAME)
    events = (
        event(1, "first-trace", time=0.1, calls_total=1, signature=(leaf,)),
        event(2, "object-identity", time=0.4, calls_total=2,
              changes=(Change("cfg", "identity", HOSTILE_NAME, HOSTILE_REPR),),
              fix=f"cfg = {HOSTILE_REPR}  # {HOSTILE_MARKUP}", note=HOSTILE_MARKUP),
        event(3, "unexplained", time=0.6, calls_total=3, raw_key=HOSTILE_JS_REPR),
    )
    return FunctionReport(
        name=HOSTILE_JS_NAME,
        location=f"{HOSTILE_REPR}.py:1",
        calls=3,
        traces=3,
        trace_seconds=0.03,
        objects=1,
        events=events,
    )


def from_the_future() -> FunctionReport:
    """A cause this version of tfretrace does not know (a session from a newer version)."""
    return FunctionReport(
        name="future_fn",
        location="future.py:1",
        calls=2,
        traces=2,
        trace_seconds=0.02,
        objects=1,
        events=(
            event(1, "first-trace", time=0.1, calls_total=1),
            event(2, "some-new-cause", time=0.2, calls_total=2),
        ),
    )


def session(*functions: FunctionReport, **fields: object) -> Session:
    """A session around the given functions."""
    base: dict[str, object] = {
        "wall_seconds": 13.2,
        "tool_version": "0.1.0",
        "tensorflow": "2.21.0",
        "keras": "3.15.0",
        "python": "3.11.9",
        "label": "test",
        "argv": ("train.py", "--epochs", "3"),
    }
    base.update(fields)
    return Session(functions=tuple(functions), **base)  # type: ignore[arg-type]


def empty_session() -> Session:
    """Nothing traced."""
    return session()


def healthy_session() -> Session:
    """Only expected traces."""
    return session(healthy(), healthy("predict_step", "serve.py:9"))


def storm_session() -> Session:
    """One 1,000-retrace storm beside a healthy function."""
    return session(storm(1000), healthy())


def mixed_session() -> Session:
    """Every kind of content a report can show, including hostile strings and warnings."""
    return session(
        storm(),
        epochs(),
        keras_predict(),
        healthy(),
        hostile(),
        from_the_future(),
        internal_errors=2,
        internal_error_messages=("adapter: could not read the cache key", HOSTILE_NAME),
        notes=("traces diverge across workers for train_step (worker0: 3, worker1: 5)",),
    )


def worker_session(label: str, traces: int) -> Session:
    """One worker's session, for merge tests."""
    return session(storm(traces), healthy(), label=label, wall_seconds=5.0)


SESSIONS: dict[str, Callable[[], Session]] = {
    "empty": empty_session,
    "healthy": healthy_session,
    "storm": storm_session,
    "mixed": mixed_session,
}


def xla_only(name: str = "predict_batch") -> FunctionReport:
    """Traced once, compiled by XLA for four shapes: recompiles but no retrace."""
    from tfretrace.records.xla_events import FIRST_COMPILE, RECOMPILE, XlaEvent

    compiles = tuple(
        XlaEvent(index=i, trace=1, cause=FIRST_COMPILE if i == 1 else RECOMPILE, seconds=0.1,
                 signature=(tensor("x", 8, 4 + i),), closest=None if i == 1 else i - 1, tf_count=i)
        for i in range(1, 5)
    )
    return FunctionReport(
        name=name, location="serve.py:7", calls=4, traces=1, trace_seconds=0.05, objects=1,
        events=(event(1, "first-trace", time=0.2, calls_total=1, seconds=0.05),),
        xla_compiles=4, xla_compile_seconds=0.4, xla_events=compiles,
    )
