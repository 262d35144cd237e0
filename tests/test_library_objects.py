"""Real TensorFlow: distinct objects traced once are not retraces (issue 33, point 2).

A helper mapping ``lambda x, y: x[name]`` over one dataset for several columns builds several
pipelines; a library that makes a tf.function per object of its own (TF Probability's
distributions, tf-keras' preprocessing layers) makes distinct functions. Each is traced once, as
TensorFlow's own counters say: tfretrace must count no retrace and give no advice that would edit
the library. tf-keras and TF Probability are optional: their tests skip, saying so, without them
(the matrix row tf2.21-tfkeras installs both).
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import tfretrace  # noqa: E402
from tfretrace.records.function_report import FunctionReport  # noqa: E402

pytestmark = pytest.mark.tf

HERE = Path(__file__)
SITE = os.path.relpath(HERE)


def line(marker: str) -> str:
    """``tests/test_library_objects.py:N`` of the line ending in ``# <marker>``."""
    for number, text in enumerate(HERE.read_text(encoding="utf-8").splitlines(), 1):
        if text.rstrip().endswith(f"# <{marker}>"):
            return f"{SITE}:{number}"
    raise AssertionError(marker)


def watched() -> Any:
    return tfretrace.watch(warn=False, log=False)


def causes(report: FunctionReport) -> list[str]:
    return [e.cause for e in report.events]


def steps(report: FunctionReport) -> list[str]:
    return [str(s["cause"]) for s in report.plan]


DATA = ({"a": [1.0, 2.0], "b": [3.0, 4.0], "c": [5.0, 6.0]}, [0, 1])


def column(ds: Any, name: str) -> Any:
    return ds.map(lambda x, y: x[name])  # <column>


def test_one_helper_mapping_several_columns_builds_several_pipelines() -> None:
    ds = tf.data.Dataset.from_tensor_slices(DATA)
    with watched() as mon:
        values = [[float(v) for v in column(ds, name)] for name in ("a", "b", "c")]
        column(ds, "a")  # the first column's pipeline again: a real rebuild
    assert values == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    fn = mon.session().function("Dataset.map(<lambda>)")
    assert fn.location == line("column") and fn.traces == 4
    assert causes(fn) == ["first-trace", "first-trace", "first-trace", "data-pipeline-rebuilt"]
    assert fn.retraces == 1


LIBRARY = '''
import tensorflow as tf


class Distribution:
    """Like TF Probability's: each object makes its own tf.function."""

    def __init__(self, scale):
        self.scale = float(scale)
        self._sample = tf.function(lambda x: x * self.scale)

    def sample(self, n):
        return self._sample(tf.ones([n]))
'''


def test_a_librarys_function_per_object_is_no_retrace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A package installed in site-packages: its tf.functions are the library's own.
    site = tmp_path / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "fakeprob.py").write_text(textwrap.dedent(LIBRARY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "fakeprob", raising=False)
    import fakeprob

    with watched() as mon:
        made = [fakeprob.Distribution(scale) for scale in (1, 2, 3)]
        samples = [float(d.sample(2)[0]) for d in made]  # <sample>
        made[0].sample(3)  # a new shape for one object: a real retrace, still reported
    assert samples == [1.0, 2.0, 3.0]
    (fn,) = mon.session().functions
    assert fn.traces == sum(d._sample.experimental_get_tracing_count() for d in made) == 4
    assert causes(fn) == ["first-trace", "first-trace", "first-trace", "shape-changed"]
    assert fn.retraces == 1 and "new-function-object" not in steps(fn)
    assert line("sample") in (fn.events[1].note or "")


def test_tf_keras_adapt_per_layer_is_no_retrace() -> None:
    tf_keras = pytest.importorskip("tf_keras", reason="tf-keras is not installed (pip install tf-keras)")
    data = np.arange(64 * 4, dtype="float32").reshape(64, 4)
    with watched() as mon:
        layers = []
        for _ in range(3):
            norm = tf_keras.layers.Normalization()
            norm.adapt(data)  # <adapt>
            layers.append(norm)
    (fn,) = [f for f in mon.session().functions if "adapt_step" in f.name]
    assert fn.traces == sum(n._adapt_function.experimental_get_tracing_count() for n in layers)
    assert fn.retraces == 0 and steps(fn) == []
    notes = [e.note for e in fn.events if e.note and "library" in e.note]
    assert len(notes) == 2 and all(line("adapt") in n for n in notes)


def test_tf_probability_joint_distributions_are_no_retrace() -> None:
    pytest.importorskip("tf_keras", reason="TF Probability needs tf-keras, which is not installed")
    tfp = pytest.importorskip("tensorflow_probability", reason="tensorflow-probability is not installed")
    tfd = tfp.distributions
    with watched() as mon:
        shapes = []
        for scale in (1.0, 2.0, 3.0):
            model = tfd.JointDistributionSequential([
                tfd.Normal(loc=0.0, scale=scale),
                lambda mu: tfd.Normal(loc=mu, scale=1.0),
            ])
            shapes.append(model.event_shape)  # <event-shape>
    session = mon.session()
    assert [[s.as_list() for s in pair] for pair in shapes] == [[[], []]] * 3
    assert session.functions and sum(f.retraces for f in session.functions) == 0
    for fn in session.functions:
        assert "new-function-object" not in steps(fn)
    notes = [e.note for f in session.functions for e in f.events if e.note and "library" in e.note]
    assert notes and all(line("event-shape") in n for n in notes)
