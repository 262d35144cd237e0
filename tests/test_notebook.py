"""Jupyter in a real kernel: %load_ext tfretrace reports the cells that retraced; %%tfretrace one cell."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[1]
# Where the screenshot of the executed notebook goes (for the closing note / CI artefacts).
SCREENSHOT = Path(os.environ.get("TFRETRACE_NOTEBOOK_SCREENSHOT", "/tmp/notebook-test.png"))

CELLS = [
    "%load_ext tfretrace",
    "import tensorflow as tf\n\n@tf.function\ndef step(x):\n    return tf.reduce_sum(x)\n\nstep(tf.zeros([2, 3]))",
    "for n in (4, 5, 6):\n    step(tf.zeros([2, n]))",
    "print('nothing traced here')\nstep(tf.zeros([2, 6]))",
    # A file name a browser would read as markup: everything shown must be escaped.
    "scope = {'tf': tf}\n"
    "exec(compile('def hostile(v):\\n    return v * 2\\n', '<img src=x onerror=alert(1)>.py', 'exec'), scope)\n"
    "hostile = tf.function(scope['hostile'])\n"
    "for v in (1, 2):\n    hostile(v)",
    "%%tfretrace\n@tf.function\ndef scale(v):\n    return v * 2.0\n\nfor v in (1.0, 2.0, 3.0):\n    scale(v)",
    "%tfretrace",
    "_.session.function('step')",
]


@pytest.fixture(scope="module")
def executed() -> Any:
    import nbclient  # dev extras: missing is a failure, never a skip
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    # The kernel inherits PYTHONPATH, so it imports this checkout's tfretrace.
    client = nbclient.NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    return notebook


def _outputs(cell: Any, mime: str) -> list[str]:
    return [o["data"][mime] for o in cell.outputs if "data" in o and mime in o["data"]]


def test_a_cell_that_retraced_gets_a_compact_report(executed: Any) -> None:
    first, storm, quiet = executed.cells[1], executed.cells[2], executed.cells[3]
    assert _outputs(first, "text/html") == []  # a first trace is expected: no report
    assert _outputs(quiet, "text/html") == [] and "nothing traced here" in quiet.outputs[0]["text"]
    (shown,) = _outputs(storm, "text/html")
    assert "this cell retraced 3 times" in shown and "shape-changed x3" in shown
    assert html.escape("x: shape (2, 3) -> (2, 4), dim 1") in shown
    assert "<b>fix:</b>" in shown and "@tf.function(" in shown  # the fix, not only the symptom
    (plain,) = _outputs(storm, "text/plain")
    assert plain.startswith("tfretrace: this cell retraced 3 times")


def test_recorded_strings_are_escaped(executed: Any) -> None:
    (shown,) = _outputs(executed.cells[4], "text/html")
    assert "this cell retraced 1 time" in shown
    assert "<img" not in shown and "&lt;img src=x onerror=alert(1)&gt;.py" in shown


def test_cell_magic_shows_the_full_html_report_offline(executed: Any) -> None:
    cell = executed.cells[5]
    (frame,) = _outputs(cell, "text/html")
    assert frame.startswith('<iframe class="tfretrace-report" sandbox="allow-scripts"')
    page = html.unescape(frame.split('srcdoc="', 1)[1].rsplit('"></iframe>', 1)[0])
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page and "default-src" in page
    assert page.count('<tr data-fn="') == 1 and ">scale</a>" in page and "python-value-changed" in page
    assert not any(f'{attr}="http' in page for attr in ("src", "href"))  # offline: nothing fetched
    assert _outputs(cell, "text/plain")[0].startswith("tfretrace: 1 function, 3 traces (2 retraces)")


def test_session_and_function_report_render_in_the_notebook(executed: Any) -> None:
    (whole,) = _outputs(executed.cells[6], "text/html")
    page = html.unescape(whole.split('srcdoc="', 1)[1])
    assert page.count('<tr data-fn="') == 3  # step, hostile and scale: everything since %load_ext
    (one,) = _outputs(executed.cells[7], "text/html")
    page = html.unescape(one.split('srcdoc="', 1)[1])
    assert page.count('<tr data-fn="') == 1 and ">step</a>" in page and "4 traces (3 retraces)" in page
    (plain,) = _outputs(executed.cells[7], "text/plain")
    assert plain.startswith("<tfretrace.FunctionReport step (") and plain.endswith("4 traces, 3 retraces>")


@pytest.mark.browser
def test_notebook_output_in_a_browser(executed: Any, tmp_path: Path) -> None:
    """The executed notebook's outputs as a page in headless Chromium; the screenshot is kept."""
    from test_browser import chromium

    blocks = []
    for number, cell in enumerate(executed.cells, 1):
        blocks.append(f"<pre class='in'>In [{number}]: {html.escape(cell.source)}</pre>")
        for output in cell.outputs:
            data = output.get("data", {})
            if "text/html" in data:
                blocks.append(f"<div class='out'>{data['text/html']}</div>")
            elif "text" in output:
                blocks.append(f"<pre class='out'>{html.escape(output['text'])}</pre>")
            elif "text/plain" in data:
                blocks.append(f"<pre class='out'>{html.escape(data['text/plain'])}</pre>")
    page = tmp_path / "notebook.html"
    page.write_text(
        "<!DOCTYPE html><meta charset='utf-8'><title>notebook</title><style>body{font:14px sans-serif;"
        "max-width:900px;margin:16px auto} pre.in{background:#f3f4f6;padding:6px} .out{margin:4px 0 14px 24px}"
        "</style>" + "".join(blocks),
        encoding="utf-8",
    )
    with chromium(width=1000, height=2400) as driver:
        driver.get(page.as_uri())
        assert driver.execute_script("return window.__pwned === undefined")
        frames = driver.find_elements("css selector", "iframe.tfretrace-report")
        assert len(frames) == 3
        driver.switch_to.frame(frames[0])
        assert driver.find_elements("css selector", "svg.timeline")  # the report drew inside
        rows = driver.find_elements("css selector", "#ranking tbody tr")
        assert len(rows) == 1
        driver.switch_to.default_content()
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SCREENSHOT))


def test_load_ext_after_earlier_traces_shows_only_the_cells_own_retraces() -> None:
    # Traces made before %load_ext are read from TensorFlow's cache when the monitor first
    # meets the function: they belong to earlier cells, never to the cell that traced once.
    import tensorflow as tf

    from tfretrace.integrations.ipython import CellWatcher

    @tf.function
    def before_ext(x: Any) -> Any:
        return x

    for n in (1, 2, 3):
        before_ext(tf.ones([n]))
    watcher = CellWatcher(shell=None)
    try:
        before_ext(tf.ones([4]))  # this cell: one trace, one retrace
        cell = watcher.collect()
        assert cell.retraces == 1
        ((report, events),) = cell.functions
        assert [(e.index, e.earlier) for e in events] == [(4, False)]
        assert report.traces == before_ext.experimental_get_tracing_count() == 4
        before_ext(tf.ones([4]))  # a later cell that does not trace: nothing to show
        assert watcher.collect().functions == ()
    finally:
        watcher.monitor.stop()
