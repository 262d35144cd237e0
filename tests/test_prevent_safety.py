"""Prevention never surprises: what it changes is announced, what the checks refuse is not warmed (real TF)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.tf


def _record(run: Any, profile: Path) -> Any:
    import tfretrace

    with tfretrace.watch(warn=False) as monitor:
        run()
    monitor.session().save(profile)
    return profile


TRACED: list[int] = []


def _noise() -> tuple[list[float], Any]:
    import tensorflow as tf

    tf.random.set_seed(7)

    @tf.function
    def generate(x: Any) -> Any:
        TRACED.append(1)  # trace-time Python: once per trace
        return tf.reduce_sum(x + tf.random.normal(tf.shape(x)))

    return [float(generate(tf.ones([n, 3]))) for n in (8, 8, 3, 8)], generate


def test_a_body_whose_results_fewer_traces_change_is_named_in_the_report(tmp_path: Path) -> None:
    import tfretrace

    profile = _record(_noise, tmp_path / "profile.json")
    with tfretrace.prevent(profile) as prevention:
        _, generate = _noise()
    assert generate.experimental_get_tracing_count() == 1  # warmed: one general trace
    session = prevention.session()
    assert session.prevention is not None
    (row,) = session.prevention.functions
    assert [c.split(":")[0] for c in row.changes] == ["random-stream", "trace-time-python"]
    assert row.to_dict()["changes"] == list(row.changes)


def _single_example() -> tuple[list[tuple[int, ...]], Any]:
    import tensorflow as tf

    @tf.function
    def predict(x: Any) -> Any:
        if x.shape[0] == 1:  # a single example: drop the batch dimension
            return tf.squeeze(x, 0) * 2.0
        return x * 2.0

    return [tuple(predict(tf.ones([n, 3])).shape) for n in (4, 1, 4, 1, 6)], predict


def test_a_body_branching_on_an_open_dimension_is_not_warmed(tmp_path: Path) -> None:
    import tfretrace

    plain, plain_fn = _single_example()
    profile = _record(_single_example, tmp_path / "profile.json")
    with tfretrace.prevent(profile) as prevention:
        shapes, predict = _single_example()
    assert shapes == plain  # (3,) for a single example, as written
    assert predict.experimental_get_tracing_count() == plain_fn.experimental_get_tracing_count()
    (row,) = prevention.report().functions
    assert row.warmups == 0 and not row.failures
    assert row.not_warmed  # said, with the reason


def _halves(log: list[int]) -> tuple[list[float], Any]:
    import tensorflow as tf

    @tf.function
    def half(x: Any) -> Any:
        log.append(1)  # trace-time Python: runs once per trace
        return tf.reduce_sum(x[: x.shape[0] // 2])

    return [float(half(tf.ones([n, 2]))) for n in (8, 8, 4, 6)], half


def test_a_warm_up_the_checks_refuse_leaves_no_trace_time_python(tmp_path: Path) -> None:
    import tfretrace

    plain_log: list[int] = []
    plain, _ = _halves(plain_log)
    profile = _record(lambda: _halves([]), tmp_path / "profile.json")
    log: list[int] = []
    with tfretrace.prevent(profile) as prevention:
        results, half = _halves(log)
    assert results == plain
    assert log == plain_log  # no failed general trace ran the body's append
    assert half.experimental_get_tracing_count() == len(plain_log)
    (row,) = prevention.report().functions
    assert row.not_warmed and not row.failures


_BEFORE = '''
import tensorflow as tf


class Scaler(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(2.0)

    @tf.function
    def step(self, x):
        return tf.reduce_sum(x) * self.scale
'''

_AFTER = '''
import tensorflow as tf


class Scaler(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = None

    @tf.function
    def step(self, x):
        if self.scale is None:  # now created lazily, at the first call
            self.scale = tf.Variable(3.0)
        return tf.reduce_sum(x) * self.scale
'''


def _load(path: Path, text: str, name: str) -> Any:
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _steps(module: Any) -> tuple[list[float], Any]:
    import tensorflow as tf

    scaler = module.Scaler()
    return [float(scaler.step(tf.ones([n, 2]))) for n in (8, 8, 3)], scaler.step


def test_an_edited_function_is_stale_and_not_warmed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tfretrace

    monkeypatch.chdir(tmp_path)
    source = tmp_path / "scaler.py"
    before = _load(source, _BEFORE, "scaler_before")
    profile = _record(lambda: _steps(before), tmp_path / "profile.json")
    after = _load(source, _AFTER, "scaler_after")
    plain, plain_step = _steps(after)
    with tfretrace.prevent(profile) as prevention:
        results, step = _steps(after)
    assert results == plain
    assert step.experimental_get_tracing_count() == plain_step.experimental_get_tracing_count()
    (row,) = prevention.report().functions
    assert row.stale and row.warmups == 0
    assert row.to_dict()["stale"] is True


def _widening() -> Any:
    import tensorflow as tf

    @tf.function
    def encode(tokens: Any) -> Any:
        return tf.reduce_sum(tokens)

    for n in (5, 7, 9):
        encode(tf.ones([2, n]))
    return encode


def test_stopping_one_prevention_leaves_the_other_warming(tmp_path: Path) -> None:
    import tfretrace

    profile = _record(_widening, tmp_path / "profile.json")
    first = tfretrace.prevent(profile)
    second = tfretrace.prevent(profile)
    first.stop()
    try:
        encode = _widening()
    finally:
        second.stop()
    assert encode.experimental_get_tracing_count() == 1
    assert _widening().experimental_get_tracing_count() == 3  # both stopped: nothing warms


def test_the_magic_run_twice_keeps_warming(tmp_path: Path) -> None:
    from tfretrace.integrations import ipython as _ipython

    profile = _record(_widening, tmp_path / "profile.json")
    shell = type("Shell", (), {})()
    _ipython._prevent(shell, str(profile))
    _ipython._prevent(shell, str(profile))  # the set-up cell, run again
    encode = _widening()
    view = _ipython._prevent(shell, "off")
    assert encode.experimental_get_tracing_count() == 1
    assert view is not None and view.report.functions[0].traces_with == 1


def _lazy_scorer() -> Any:
    import tensorflow as tf

    class Scorer(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale: Any = None

        @tf.function
        def score(self, x: Any) -> Any:
            if self.scale is None:
                self.scale = tf.Variable(2.0)
            return tf.reduce_sum(x) * self.scale

    scorer = Scorer()
    for n in (10, 10, 4, 1):
        scorer.score(tf.ones([n, 3]))
    return scorer.score


def test_a_budget_counts_what_traced_after_the_warm_up(tmp_path: Path) -> None:
    import tfretrace

    # Recorded in another process: a budget counts every trace of the code in this one, and an
    # earlier test of this worker may have left a monitor that saw the recording's traces.
    profile = tmp_path / "profile.json"
    driver = tmp_path / "record.py"
    driver.write_text(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                      "import test_prevent_safety\ntest_prevent_safety._lazy_scorer()\n")
    done = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", str(profile), str(driver)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    with tfretrace.prevent(profile, learn=False) as prevention, tfretrace.budget(max_traces=1):
        score = _lazy_scorer()  # its variable-creating first trace, then the warm-up (not counted)
    assert score.experimental_get_tracing_count() == 2
    session = prevention.session()
    (report,) = [f for f in session.functions if f.name.endswith("score")]
    assert [e.warmup for e in report.events] == [False, True]
    assert report.retraces == 0


def _rates(rates: tuple[float, ...]) -> Any:
    import tensorflow as tf

    @tf.function
    def scaled(x: Any, lr: float) -> Any:
        return tf.reduce_sum(x) * lr

    for n, lr in zip((3, 5, 7), rates):
        scaled(tf.ones([n]), lr)
    return scaled


def test_what_a_warm_up_cannot_prevent_is_counted_in_this_run(tmp_path: Path) -> None:
    import tfretrace

    profile = _record(lambda: _rates((0.1, 0.05, 0.025)), tmp_path / "profile.json")
    with tfretrace.prevent(profile, learn=False) as prevention:
        scaled = _rates((0.1, 0.1, 0.1))  # one learning rate this time: only shapes vary
    (row,) = prevention.report().functions
    assert row.traces_after_warmup == scaled.experimental_get_tracing_count() - row.warmups
    assert row.unpreventable == ()  # the profile's python-value retraces did not happen here


def _layer_noise() -> tuple[list[float], Any]:
    import tensorflow as tf

    tf.random.set_seed(7)

    def jitter(x: Any) -> Any:  # a helper the body calls: the def's own source shows no draw
        return x + tf.random.normal(tf.shape(x))

    @tf.function
    def generate(x: Any) -> Any:
        return tf.reduce_sum(jitter(x))

    return [float(generate(tf.ones([n, 3]))) for n in (8, 8, 3, 8)], generate


def test_a_draw_in_code_the_body_calls_is_read_from_tensorflows_graphs(tmp_path: Path) -> None:
    import tfretrace

    profile = _record(_layer_noise, tmp_path / "profile.json")
    with tfretrace.prevent(profile) as prevention:
        _, generate = _layer_noise()
    assert generate.experimental_get_tracing_count() == 1  # warmed: one general trace
    (row,) = prevention.report().functions
    assert [c.split(":")[0] for c in row.changes] == ["random-stream"]
