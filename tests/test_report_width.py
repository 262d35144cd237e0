"""Reports at the terminal's width: no line of a report wider than the console, figures whole."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import sessions as S
from tfretrace.render._code import fit
from tfretrace.render._model import summary_line
from tfretrace.render.text import TextRenderer, render_plans

# Matrix rows leave it out (tools/matrix.py): the layout of reports at 80 columns.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parents[1]
# What TensorFlow's own C++ and absl logging writes to the same stderr: not tfretrace's to fit.
TF_LOG = re.compile(r"^(?:[IWEF]\d{4} |WARNING: All log messages|To enable the following)")
LONG_FIX = ("losses = [float(train_step(t, y, tf.constant(lr, dtype=tf.float32)))"
            " for t, y in length_batches(train, train_y)]  # the learning rate as a tensor")


def _keras_session() -> S.Session:
    """Keras' predict function (a long library location) beside an XLA function and a long fix."""
    keras = replace(S.keras_predict(), name="one_step_on_data_distributed_with_a_long_name",
                    location="keras/src/backend/tensorflow/trainer.py:279")
    storm = S.storm(6)
    events = tuple(replace(e, fix=LONG_FIX) if e.index == 2 else e for e in storm.events)
    return S.session(keras, replace(storm, events=events), S.xla_only())


@pytest.mark.parametrize("width", [80, 100])
def test_a_keras_report_fits_the_width_with_every_figure_whole(width: int) -> None:
    session = _keras_session()
    out = TextRenderer(width=width, verbose=True).render(session)
    assert max(len(line) for line in out.splitlines()) <= width
    rows = [line.split() for line in out.splitlines()]
    # Each function's row carries its calls, traces and trace seconds as whole cells.
    for report in session.functions:
        assert any([str(report.calls), str(report.traces), f"{report.trace_seconds:.3f}"] == row[-7:-4]
                   or [str(report.calls), str(report.traces), f"{report.trace_seconds:.3f}"] == row[-6:-3]
                   for row in rows), report.name
    plans = render_plans(session, width=width)
    assert max(len(line) for line in plans.splitlines()) <= width


@pytest.mark.parametrize("width", range(40, 140, 7))
def test_the_summary_line_never_breaks_inside_a_figure(width: int) -> None:
    session = S.session(S.storm(6), S.xla_only(), wall_seconds=6.18)
    figures = re.findall(r"\d[\d.]*%?(?: (?:ms|s|traces?|retraces?|functions?))?", summary_line(session))
    head = TextRenderer(width=width, verbose=True).render(session).split("\n\n")[0]
    lines = head.splitlines()
    assert max(len(line) for line in lines) <= width
    for figure in figures:
        assert any(figure in line for line in lines), (figure, lines)


def test_long_fix_code_is_broken_where_python_reads_it_the_same() -> None:
    for width in (30, 50, 70):
        fitted = fit(LONG_FIX, width)
        assert ast.dump(ast.parse(fitted)) == ast.dump(ast.parse(LONG_FIX))
        assert len(fitted.splitlines()) > 1
        # The comment is kept on lines of its own, wrapped to the width where it is wider.
        comment = [line.strip()[1:].strip() for line in fitted.splitlines() if line.strip().startswith("#")]
        assert " ".join(comment) == "the learning rate as a tensor"
        assert all(len(line) <= width for line in fitted.splitlines() if line.strip().startswith("#"))
    # Nothing to break at: the line runs long rather than being cut.
    assert fit("x = 'a very long string literal that cannot be broken'", 20).count("\n") == 0


@pytest.mark.tf
def test_the_demo_under_fix_plan_fits_80_columns(tmp_path: Path) -> None:
    # As `make demo` runs it: a copy of the demo in a folder of its own, the session beside it.
    (tmp_path / "demo_train.py").write_text((ROOT / "examples" / "demo_train.py").read_text("utf-8"), "utf-8")
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "tfretrace", "run", "--fix-plan", "--save", "run.json", "demo_train.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines() if not TF_LOG.match(line)]
    assert any(line.startswith("Apply: ") for line in ours)
    too_wide = [line for line in ours if len(line) > 80]
    assert too_wide == []


def test_a_docstring_line_of_fix_code_is_never_broken() -> None:
    # keras-pad-rows' helper has a docstring line with brackets and commas: broken there, the printed
    # code would no longer be the code `fix` writes (seen on a held-out program's plan at 100 columns).
    import ast

    from tfretrace.render._code import fit

    line = "    they are (views, not copies); the last partial batch is padded, its last row repeated, to a full one"
    call = "    return g(aaaaaaaaaaaa, bbbbbbbbbbbbbbbb, cccccccccccccccccc, ddd)"
    source = f'def f(x):\n    """Doc.\n\n{line}\n    """\n{call}\n'
    printed = fit(source, 60)
    assert line in printed.split("\n")
    assert ast.dump(ast.parse(printed)) == ast.dump(ast.parse(source))
    assert max(len(x) for x in printed.split("\n") if x != line) <= 60
    # A fragment that does not parse on its own: the lines between its triple quotes stay too.
    fragment = f'    """Doc.\n{line}\n    """\n'
    assert line in fit(fragment, 60).split("\n")
