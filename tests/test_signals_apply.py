"""`fix --apply` stopped by a real SIGTERM or SIGHUP between two file writes: every file as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_fix_untrusted import TF_DECORATOR, TRAIN, recorded, step
from tfretrace.fix.applying import apply as apply_mod
from tfretrace.fix.core.source import Replacement, Span

# Loaded by the `fix` process only (through the test's PYTHONPATH): the first file write finishes,
# says so in a file, then waits; the signal arrives while the second file is still unwritten.
_PAUSE = """\
import time
import tfretrace.fix.applying.apply as apply

_real = apply.atomic_write_text
_calls = []


def _paused(path, text, **kw):
    _calls.append(path)
    done = _real(path, text, **kw)
    if len(_calls) == 1:
        with open({marker!r}, "w") as handle:
            handle.write("written")
        time.sleep(120)
    return done


apply.atomic_write_text = _paused
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_between_two_writes_restores_every_file(tmp_path: Path, signum: int) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # CRLF endings and a BOM: restored byte for byte, not merely as equal text.
    data = b"\xef\xbb\xbfimport tensorflow as tf\r\n\r\nds = tf.data.Dataset.range(10).batch(4)\r\n"
    train = TRAIN.encode()
    batch = Replacement(Span("data.py", 3, 38, 3, 38), ", drop_remainder=True")
    saved = recorded(project, [step("reduce-retracing", (TF_DECORATOR,)), step("drop-remainder", (batch,))],
                     {"data.py": data, "train.py": train}, location="train.py:4")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "first-written"
    (hooks / "sitecustomize.py").write_text(_PAUSE.format(marker=str(marker)))
    package = str(Path(apply_mod.__file__).parents[2])
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfretrace", "fix", str(saved), "--apply", "--unsafe-fixes"], cwd=project,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(hooks), package))},
        # The test relies on the signal's default disposition: under nohup SIGHUP arrives ignored, and
        # `fix` rightly leaves an ignored signal ignored, so the child gets the default set here.
        preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), proc.stderr.read() if proc.stderr else ""
        # One file is edited, the other not yet: the state the signal must not leave behind.
        assert [(project / n).read_bytes() != b for n, b in (("data.py", data), ("train.py", train))].count(True) == 1
        os.kill(proc.pid, signum)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, err
    assert (project / "data.py").read_bytes() == data
    assert (project / "train.py").read_bytes() == train
    assert sorted(p.name for p in project.iterdir()) == ["data.py", "run.json", "train.py"]  # no temporary left
