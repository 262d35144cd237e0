"""`tfretrace lint --session`: findings a recorded run saw retrace, and retraces no rule predicted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tfretrace.cli.lint_command import main
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session

# Three hazards; only the counter passed to train_step retraces when the program runs.
PROGRAM = """\
import json
import random
import sys

import tensorflow as tf


@tf.function
def train_step(x, step):
    return x * 2.0


@tf.function
def scale(x):
    print("scaling")
    return x + 1.0


@tf.function
def jitter(x):
    return x + random.random()


for step in range(4):
    train_step(tf.constant(1.0), step)
for _ in range(3):
    scale(tf.constant(2.0))
    jitter(tf.constant(2.0))
counts = {f.__name__: f.experimental_get_tracing_count() for f in (train_step, scale, jitter)}
json.dump(counts, open(sys.argv[1], "w"))
"""
LINES = {"TFR106": 25, "TFR108": 15, "TFR109": 21}


def linted(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main([*argv, "--no-config", "--no-cache", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.tf
def test_a_run_confirms_the_one_hazard_that_retraced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    done = subprocess.run(
        [sys.executable, "-m", "tfretrace", "run", "--save", "run.json", "-o", "report.html", "train.py",
         "counts.json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    # TensorFlow's own counter: train_step traced once per step value, the others once.
    measured = json.loads((tmp_path / "counts.json").read_text())
    assert measured == {"train_step": 4, "scale": 1, "jitter": 1}

    monkeypatch.chdir(tmp_path)
    code, doc = linted(["--session", "run.json", "train.py"], capsys)
    assert code == 1
    by_code = {f["code"]: f for f in doc["findings"]}
    assert {c: f["line"] for c, f in by_code.items()} == LINES
    observed = by_code["TFR106"]["observed"]
    assert observed["retraces"] == measured["train_step"] - 1
    assert observed["seconds"] > 0 and observed["functions"] == ["train_step"]
    assert by_code["TFR108"]["observed"] is None and by_code["TFR109"]["observed"] is None
    assert doc["session"]["confirmed"] == 1 and doc["session"]["unpredicted"] == []

    main(["--session", "run.json", "train.py", "--no-config", "--no-cache", "--format", "sarif"])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    marks = {r["ruleId"]: r["properties"].get("observed") for r in results}
    assert marks["TFR106"]["retraces"] == 3 and marks["TFR108"] is None and marks["TFR109"] is None

    main(["--session", "run.json", "train.py", "--no-config", "--no-cache"])
    text = capsys.readouterr().out
    (line,) = [t for t in text.splitlines() if " TFR106 " in t]
    assert line.startswith("train.py:25:") and line.endswith("s]") and "[confirmed: 3 retraces, " in line

    # From another folder holding the same file (a CI checkout, a colleague's copy): matched by content.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "train.py").write_bytes((tmp_path / "train.py").read_bytes())
    monkeypatch.chdir(elsewhere)
    code, doc = linted(["--session", str(tmp_path / "run.json"), "train.py"], capsys)
    assert doc["session"]["confirmed"] == 1 and doc["session"]["note"] is None
    by_code = {f["code"]: f for f in doc["findings"]}
    assert by_code["TFR106"]["observed"]["retraces"] == 3 and by_code["TFR108"]["observed"] is None
    # Another version of it: nothing is marked, and the report says why instead of a silent 0.
    (elsewhere / "train.py").write_text(PROGRAM + "# edited\n", encoding="utf-8")
    code, doc = linted(["--session", str(tmp_path / "run.json"), "train.py"], capsys)
    assert doc["session"]["confirmed"] == 0 and "train.py" in doc["session"]["note"]
    monkeypatch.chdir(tmp_path)

    # The run's own HTML report shows the same marks for the files it names.
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section class="lint" id="lint">'):html.index("</main>")]
    assert section.count('class="finding confirmed"') == 1 and section.count('class="finding static"') == 2
    assert "confirmed: 3 retraces, " in section


def _event(index: int, call_site: str | None, seconds: float = 0.25) -> TraceEvent:
    return TraceEvent(index=index, cause="python-value-changed", seconds=seconds, time=float(index),
                      call_site=call_site, signature=(), expected=index == 1)


def _function(name: str, location: str, *sites: str) -> FunctionReport:
    events = tuple(_event(i, site) for i, site in enumerate(sites, start=1))
    return FunctionReport(name=name, location=location, calls=len(sites), traces=len(sites),
                          trace_seconds=0.25 * len(sites), objects=1, events=events)


SOURCE = """\
import tensorflow as tf


@tf.function
def step(x, i):
    return x


def make():
    return tf.function(lambda x: x)


for i in range(5):
    step(1.0, i)
for x in data:
    step(x, 0)
"""


def test_findings_are_marked_and_unpredicted_retraces_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(SOURCE, encoding="utf-8")
    Path("other.py").write_text("x = 1\n", encoding="utf-8")
    session = Session(
        functions=(
            # three retraces at the finding's line, two at line 16 (shapes of `data`: no rule)
            _function("step", "train.py:4", "train.py:14", "train.py:14", "train.py:14", "train.py:14",
                      "train.py:16", "train.py:16"),
            # a file that was not linted: not the linter's miss
            _function("elsewhere", "lib/model.py:3", "lib/model.py:9", "lib/model.py:9"),
        ),
        wall_seconds=2.0,
        root=str(tmp_path),
    )
    session.save("run.json")
    code, doc = linted(["--session", "run.json", "train.py", "other.py"], capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert (finding["code"], finding["line"], finding["confidence"]) == ("TFR106", 14, "confirmed")
    assert finding["observed"] == {"retraces": 3, "seconds": 0.75, "functions": ["step"]}
    (missed,) = doc["session"]["unpredicted"]
    assert (missed["path"], missed["line"], missed["retraces"]) == ("train.py", 16, 2)
    assert missed["causes"] == ["python-value-changed"]

    # The same session recorded from another folder: relative paths start at its root.
    away = tmp_path / "away"
    away.mkdir()
    replace(session, root=str(tmp_path)).save(away / "run.json")
    code, doc = linted(["--session", "away/run.json", "train.py"], capsys)
    assert doc["findings"][0]["observed"]["retraces"] == 3

    main(["--session", "run.json", "train.py", "--no-config", "--no-cache"])
    text = capsys.readouterr().out
    assert "train.py:16: step: 2 retraces, 0.5 s (python-value-changed)" in text


def test_without_session_no_mark_and_a_bad_session_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(SOURCE, encoding="utf-8")
    _, doc = linted(["train.py"], capsys)
    assert doc["session"] is None and doc["findings"][0]["observed"] is None
    Path("bad.json").write_text('{"schema": 99}', encoding="utf-8")
    for name in ("bad.json", "missing.json"):
        assert main(["--session", name, "train.py", "--no-config", "--no-cache"]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
        assert captured.err.startswith("tfretrace lint: error: ")


def test_the_html_report_shows_the_lint_findings_of_the_sessions_files_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfretrace.render.html import HtmlRenderer

    hostile = "d<img src=x onerror=alert(1)>"
    (tmp_path / hostile).mkdir()
    (tmp_path / hostile / "train.py").write_text(SOURCE, encoding="utf-8")
    where = f"{hostile}/train.py"
    session = Session(
        functions=(
            _function("step", f"{where}:4", *[f"{where}:14"] * 4, f"{where}:16", f"{where}:16"),
            _function("fit", "/nowhere/site-packages/keras/trainer.py:9", "/nowhere/site-packages/keras/trainer.py:9"),
        ),
        wall_seconds=2.0,
        root=str(tmp_path),
    )
    monkeypatch.chdir(tmp_path.parent)  # analysed from elsewhere: the session's root places the files
    from tfretrace.runtime.lint_panel import lint_panel

    assert 'id="lint"' not in HtmlRenderer().render(session)  # the renderer lints nothing itself
    session = replace(session, lint=lint_panel(session))
    html = HtmlRenderer().render(session)
    section = html[html.index('<section class="lint" id="lint">'):html.index("</main>")]
    assert section.count('class="finding confirmed"') == 1 and 'class="finding static"' not in section
    assert "confirmed: 3 retraces, 0.8 s" in section and "TFR106" in section
    assert section.count("<li><code>") == 1 and ":16</code> step: 2 retrace(s)" in section
    assert "<img src=x" not in html and "d&lt;img src=x onerror=alert(1)&gt;" in html
    assert "http://" not in section and "https://" not in section  # offline, as the rest of the page

    # Analysed where the files are not: no lint section. Drawn where they are gone: the same page.
    elsewhere = replace(session, root=str(tmp_path / "gone"), lint=None)
    assert lint_panel(elsewhere) is None
    shutil.rmtree(tmp_path / hostile)
    assert HtmlRenderer().render(session) == html


WHILES = """\
import json
import sys

import tensorflow as tf


@tf.function
def eager_step(x, tries):
    return x * 0.5


@tf.function
def inner_step(x, tries):
    return x * 0.5


@tf.function
def refine(x):
    tries = 0
    while tf.reduce_any(x > 1.0):
        tries += 1
        x = inner_step(x, tries)
    return x


x = tf.constant(16.0)
tries = 0
while tf.reduce_any(x > 1.0):
    tries += 1
    x = eager_step(x, tries)
for v in (16.0, 64.0, 256.0):
    refine(tf.constant(v))
json.dump({"eager_step": eager_step.experimental_get_tracing_count(),
           "inner_step": inner_step.experimental_get_tracing_count()}, open(sys.argv[1], "w"))
"""


@pytest.mark.tf
def test_a_tensor_test_while_retraces_only_where_it_runs_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The family TFR106 keeps quiet (a traced body's loop) beside the one it reports (eager).
    (tmp_path / "loops.py").write_text(WHILES, encoding="utf-8")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "loops.py", "counts.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    measured = json.loads((tmp_path / "counts.json").read_text())
    assert measured == {"eager_step": 4, "inner_step": 1}  # TensorFlow's own tracing counts
    monkeypatch.chdir(tmp_path)
    _, doc = linted(["loops.py"], capsys)
    assert [(f["code"], f["line"]) for f in doc["findings"]] == [("TFR106", 30)]  # eager_step(x, tries)


DECAYED = """\
import tensorflow as tf


@tf.function
def train_step(x, lr):
    return x * lr


lr = 0.05
for epoch in range(3):
    losses = [float(train_step(x, lr)) for x in (1.0, 2.0)]
    lr = lr * 0.9
"""


def test_a_decayed_python_float_is_predicted_not_unpredicted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(DECAYED, encoding="utf-8")
    # The README's headline bug: each epoch's new lr traces train_step again at line 11.
    Session(functions=(_function("train_step", "train.py:4", "train.py:11", "train.py:11", "train.py:11"),),
            wall_seconds=2.0, root=str(tmp_path)).save("run.json")
    code, doc = linted(["--session", "run.json", "train.py"], capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert (finding["code"], finding["line"]) == ("TFR106", 11)
    assert finding["observed"]["retraces"] == 2
    assert doc["session"]["unpredicted"] == []
