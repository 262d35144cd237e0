"""The HTML timeline's lines on a real Keras run: cumulative calls and traces never go back in time or down."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from tfretrace.records.session import load
from tfretrace.render.timeline import timeline_svg

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parent.parent

# fit with validation, evaluate on a growing partial batch, predict: Keras' own functions, whose
# traces enclose the model's and so are recorded out of their start order.
PROGRAM = """\
import numpy as np
import tensorflow as tf

x = np.linspace(0, 1, 150, dtype="float32").reshape(50, 3)
y = x[:, :1] * 2
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
model.compile(loss="mse")
for epoch in range(3):
    model.fit(x, y, batch_size=16, verbose=0, validation_data=(x[:10], y[:10]))
    model.evaluate(x[: 7 + epoch], y[: 7 + epoch], batch_size=4, verbose=0)
"""


def _points(svg: str, css: str) -> list[tuple[float, float]]:
    found = re.search(rf'<polyline class="{css}" points="([^"]*)"', svg)
    assert found is not None, css
    return [(float(a), float(b)) for a, b in (p.split(",") for p in found.group(1).split())]


def test_cumulative_lines_move_forward_in_time_and_never_fall(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", "run.json", "train.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    session = load(str(tmp_path / "run.json"))
    keras = [f for f in session.functions if f.keras is not None]
    assert {f.keras.method for f in keras if f.keras is not None} >= {"fit", "evaluate"}
    for report in keras:
        svg = str(timeline_svg(report, session.wall_seconds, min(e.time for e in report.events)))
        for css in ("calls", "traces"):
            points = _points(svg, css)
            # SVG y grows downwards: a count that rises has a falling y.
            assert all(a[0] <= b[0] for a, b in itertools.pairwise(points)), (report.keras, css, points)
            assert all(a[1] >= b[1] for a, b in itertools.pairwise(points)), (report.keras, css, points)
        # The calls line ends at the row's own count, the traces line at its trace count.
        calls, traces = _points(svg, "calls")[-1], _points(svg, "traces")[-1]
        assert calls[1] < _points(svg, "calls")[0][1] and traces[1] < _points(svg, "traces")[0][1]
