"""TensorBoard event files written by tfretrace, read back with TensorBoard's own reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sessions as S
from tfretrace.integrations.tensorboard import SUFFIX, tag_name, write_session


def read_back(logdir: Path) -> dict[str, list[tuple[int, Any]]]:
    """tag -> [(step, value)] from every tfretrace event file in ``logdir``, via TensorBoard."""
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util

    found: dict[str, list[tuple[int, Any]]] = {}
    files = sorted(logdir.glob(f"*{SUFFIX}"))
    assert files, f"no event file in {logdir}"
    for path in files:
        acc = event_accumulator.EventAccumulator(str(path), size_guidance={event_accumulator.TENSORS: 0})
        acc.Reload()
        for tag in acc.Tags()["tensors"]:
            for event in acc.Tensors(tag):
                value = tensor_util.make_ndarray(event.tensor_proto)
                value = value.item() if value.shape == () else value.tolist()
                found.setdefault(tag, []).append((event.step, value.decode() if isinstance(value, bytes) else value))
    return found


def test_a_session_becomes_scalars_per_function_and_text_per_retrace(tmp_path: Path) -> None:
    session = S.session(S.storm(6), S.healthy())
    assert write_session(session, tmp_path) == 7
    tags = read_back(tmp_path)
    traces = tags["tfretrace/train_step/traces"]
    assert traces == [(e.calls_total, e.index) for e in session.function("train_step").events]
    seconds = [v for _, v in tags["tfretrace/train_step/trace_seconds"]]
    assert seconds == pytest.approx([0.2 + 0.012 * i for i in range(6)])  # cumulative
    texts = tags["tfretrace/train_step/retrace"]
    assert [step for step, _ in texts] == [2, 3, 4, 5, 6]  # retraces only, not the first trace
    assert "x: shape (8, 10) -> (8, 11), dim 1" in texts[0][1] and "**Fix:**" in texts[0][1]
    assert "tfretrace/eval_step/traces" in tags and "tfretrace/eval_step/retrace" not in tags


def test_tags_are_one_segment_per_function() -> None:
    assert tag_name("evaluate.<locals>.batch_error") == "evaluate.<locals>.batch_error"
    assert tag_name("a/b c") == "a_b_c"
    assert tag_name("///") == "function"


@pytest.mark.tf
def test_retrace_callback_writes_at_the_training_step(tmp_path: Path) -> None:
    import keras
    import numpy as np

    from tfretrace.keras import RetraceCallback

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="tiny")
    model.compile(optimizer="sgd", loss="mse")
    callback = RetraceCallback(tensorboard=str(tmp_path))
    x, y = np.ones((8, 4), "float32"), np.ones((8, 2), "float32")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[callback])  # 4 steps
    model.compile(optimizer="sgd", loss="mse")  # resets the model's functions: a retrace
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[callback])
    tags = read_back(tmp_path)
    # The row is named after the model, the method and Keras' own function, whose name differs
    # between Keras 3 (multi_step_on_iterator) and Keras 2 (train_function).
    (train,) = [t for t in tags if t.startswith("tfretrace/tiny.fit.") and t.endswith("/traces")]
    steps = [step for step, _ in tags[train]]
    assert steps[0] == 0 and steps[-1] == 4  # traced before the first step and after the 4th
    texts = [text for tag, entries in tags.items() if tag.endswith("/retrace") for _, text in entries]
    assert any("keras-recompile" in text for text in texts), texts
    session = callback.session()
    assert sum(len(v) for t, v in tags.items() if t.endswith("/traces")) == session.total_traces
