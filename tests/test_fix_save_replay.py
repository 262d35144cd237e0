"""The replay of a save's traces: an export wrapper's call traces in the save context, then the cache again."""

from __future__ import annotations

from dataclasses import replace

from sessions import event, tensor
from tfretrace.fix.core.predict import Config, calls_of, count
from tfretrace.records.function_report import FunctionReport


def module(*rows: tuple[str, int | None]) -> FunctionReport:
    """Net.__call__ with the given (cause, batch size) events, the first one a first trace."""
    events = tuple(
        replace(event(i + 1, cause, time=i, calls_total=i + 1, signature=(tensor("x", n, 784),)),
                call_site="prog.py:30")
        for i, (cause, n) in enumerate(rows)
    )
    return FunctionReport(name="MLP.__call__", location="prog.py:10", calls=len(rows), traces=len(rows),
                          trace_seconds=0.01, objects=1, events=events)


# tensorflow/docs mlp_core, as TensorFlow 2.21 traced it: three batch sizes, then a save through an
# export wrapper with an input_signature of (None, 784).
MLP_CORE = module(
    ("first-trace", 128), ("variable-creation", 128), ("shape-changed", 32), ("shape-changed", 72),
    ("saved-model-export", None), ("saved-model-export", 128), ("saved-model-export", 32),
    ("saved-model-export", 72), ("saved-model-export", None),
)
OPEN = (tensor("x", None, 784),)


def test_the_replay_reproduces_the_save_of_an_export_wrapper() -> None:
    replay = calls_of(MLP_CORE)
    assert [len(replay.calls), len(replay.save_calls), replay.saving_traces] == [3, 1, 5]
    assert count(replay, Config()) == 9


def test_under_reduce_retracing_the_wrappers_call_still_traces_in_the_save_context() -> None:
    # Measured on the same program with reduce_retracing=True: 6 (2 calls, 1 variable, 3 saving).
    assert count(calls_of(MLP_CORE), Config(reduce_retracing=True)) == 6


def test_under_an_input_signature_the_save_traces_once() -> None:
    # Measured with input_signature=[TensorSpec([None, 784])]: 3.
    assert count(calls_of(MLP_CORE), Config(input_signature=OPEN)) == 3


def test_a_signature_the_wrappers_call_would_not_bind_is_refused() -> None:
    pinned = (tensor("x", 128, 784),)
    only_128 = module(("first-trace", 128), ("saved-model-export", None), ("saved-model-export", 128),
                      ("saved-model-export", None))
    assert count(calls_of(only_128), Config()) == 4
    assert count(calls_of(only_128), Config(input_signature=pinned)) is None


def test_a_save_without_a_wrapper_traces_each_cached_signature_once() -> None:
    plain = module(("first-trace", 8), ("shape-changed", 4), ("saved-model-export", 8), ("saved-model-export", 4))
    replay = calls_of(plain)
    assert replay.save_calls == ()
    assert count(replay, Config()) == 4
    assert count(replay, Config(input_signature=OPEN)) == 2
