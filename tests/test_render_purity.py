"""Renderers are pure functions of the session: no planner, no TensorFlow, no program files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# `python -m tfretrace` with TensorFlow unimportable (None in sys.modules makes `import
# tensorflow` raise ImportError, as on a machine without it); alter_sys sets argv[0] as -m does.
NO_TF = (
    "import sys, runpy; sys.modules['tensorflow'] = None; sys.modules['keras'] = None; "
    "runpy.run_module('tfretrace', run_name='__main__', alter_sys=True)"
)

PROGRAM = """
import tensorflow as tf

@tf.function
def step(x, lr):
    return tf.reduce_sum(x) * lr

for n in (3, 4, 5):
    step(tf.ones([n]), 0.5)
for lr in (0.1, 0.2):
    step(tf.ones([5]), lr)
"""


def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", COLUMNS="100")
    return subprocess.run([sys.executable, *args], capture_output=True, cwd=cwd, env=env, timeout=300, check=False)


def test_importing_the_text_renderer_loads_no_fix_module() -> None:
    code = (
        "import sys, tfretrace.render.text, tfretrace.render._model\n"
        "print([m for m in sys.modules if m.startswith(('tfretrace.fix', 'tfretrace.lint', 'tensorflow'))])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.tf
def test_report_of_a_saved_session_is_the_same_bytes_without_tensorflow_or_the_program(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM, encoding="utf-8")
    run = _python("-m", "tfretrace", "run", "--save", str(tmp_path / "s.json"), "prog.py", cwd=project)
    assert run.returncode == 0, run.stderr
    saved = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert any(f["plan"] for f in saved["functions"])  # the report has plans to draw
    here = _python("-m", "tfretrace", "report", "s.json", "-o", "-", "-o", "here.html", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    shutil.rmtree(project)
    elsewhere = _python("-c", NO_TF, "report", "s.json", "-o", "-", "-o", "elsewhere.html", cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert b"prog.py" in here.stdout
    assert elsewhere.stdout == here.stdout
    # The HTML's lint panel is the one the run saved, not a lint of whatever is on disk now.
    page = (tmp_path / "here.html").read_text(encoding="utf-8")
    assert 'id="lint"' in page
    assert (tmp_path / "elsewhere.html").read_text(encoding="utf-8") == page
