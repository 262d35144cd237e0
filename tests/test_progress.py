"""The live status line of ``tfretrace run``: counts, throttling, width, and erasing it."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest

import sessions as S
from tfretrace.cli.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_counts_functions_traces_and_retraces_and_redraws_at_most_four_times_a_second() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, width=200, clock=clock)
    storm = S.storm(6)
    for event in storm.events:  # 6 traces of one function within 0.1 s: one redraw
        progress(SimpleNamespace(key="a", name="train_step"), event)
        clock.now += 0.02
    assert stream.getvalue().count("\r") == 1
    clock.now += 1.0
    progress(SimpleNamespace(key="b", name="eval_step"), S.healthy().events[0])
    assert (progress.traces, progress.retraces, len(progress.functions)) == (7, 5, 2)
    last = stream.getvalue().split("\r")[-1]
    assert last == "tfretrace: 2 functions, 7 traces (5 retraces), last: eval_step\x1b[K"
    progress.clear()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_the_line_never_wraps_and_shows_control_characters_as_escapes() -> None:
    stream = io.StringIO()
    progress = Progress(stream, width=40)
    progress(SimpleNamespace(key="a", name="\x1b]0;pwned\x07" + "n" * 80), S.healthy().events[0])
    line = stream.getvalue().removeprefix("\r").removesuffix("\x1b[K")
    assert len(line) < 40 and "\x1b" not in line


def test_clear_without_a_line_writes_nothing() -> None:
    stream = io.StringIO()
    Progress(stream).clear()
    assert stream.getvalue() == ""


def test_a_name_with_a_newline_stays_on_the_status_line() -> None:
    stream = io.StringIO()
    Progress(stream, width=200)(SimpleNamespace(key="a", name="step\nfake: 0 retraces"), S.healthy().events[0])
    assert "\n" not in stream.getvalue() and "step\\nfake" in stream.getvalue()


# -- in a real terminal --------------------------------------------------------------------------

PRINTS_WHILE_RETRACING = """
import sys, time
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_sum(x)

for epoch in range(1, 4):  # 4 traces in all: TensorFlow warns from 5
    train_step(tf.zeros([epoch]))  # a retrace per epoch: the status line redraws
    time.sleep(0.3)                # longer than the redraw throttle
    print(f"epoch {epoch}: loss 0.{epoch}", flush=True)
    sys.stderr.write(f"stderr {epoch}\\n")
print("partial", end="", flush=True)
train_step(tf.zeros([9]))
time.sleep(0.3)
print(" line ends here", flush=True)
"""


def _screen(raw: bytes) -> list[str]:
    """The lines a terminal shows for ``raw`` (\\r, \\n, erase-to-end; other escapes ignored)."""
    import re

    lines: list[str] = []
    line: list[str] = []
    col = 0
    text = raw.decode("utf-8", "replace")
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b.|\r|\n|[^\x1b\r\n]", text):
        if token == "\r":
            col = 0
        elif token == "\n":
            lines.append("".join(line).rstrip())
            line, col = [], 0
        elif token == "\x1b[K":
            del line[col:]
        elif token.startswith("\x1b"):
            continue
        else:
            line[col:col + 1] = [token] if col < len(line) else [*([" "] * (col - len(line))), token]
            col += 1
    if line:
        lines.append("".join(line).rstrip())
    return lines


def _in_a_terminal(argv: list[str], cwd: Any, level: str = "0") -> bytes:
    """Run ``argv`` with stdin, stdout and stderr on a pseudo-terminal; everything it showed."""
    import os
    import pty
    import subprocess

    main, child = pty.openpty()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=level, COLUMNS="120", TERM="xterm")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child, cwd=cwd, env=env, close_fds=True)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=300)
    os.close(main)
    return b"".join(chunks)


@pytest.mark.tf
# Level 3: `tfretrace run` reads fd 2 through its XLA log tap (a pipe) from the start.
# Level 2: TensorFlow's C++ log keeps to errors, so the status line is drawn.
@pytest.mark.parametrize("level", ["2", "3"])
def test_the_status_line_never_mixes_into_the_programs_output_in_a_terminal(tmp_path: Any, level: str) -> None:
    import sys

    program = tmp_path / "prog.py"
    program.write_text(PRINTS_WHILE_RETRACING, encoding="utf-8")
    plain = _screen(_in_a_terminal([sys.executable, str(program)], tmp_path, level))
    raw = _in_a_terminal([sys.executable, "-m", "tfretrace", "run", str(program)], tmp_path, level)
    assert b"\x1b[K" in raw and b"tfretrace: 1 function, " in raw  # the status line was drawn
    shown = _screen(raw)
    ours = [line for line in plain if line.startswith(("epoch", "stderr", "partial"))]
    assert len(ours) == 7
    # Each of the program's lines shows exactly as without tfretrace, in the same order.
    assert [line for line in shown if ("epoch" in line or "stderr" in line or "partial" in line)] == ours


NATIVE_LOG_WHILE_RETRACING = """
import os, time
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_sum(x)

for n in range(1, 4):
    train_step(tf.zeros([n]))
    time.sleep(0.3)  # the status line is redrawn after each trace
    os.write(2, b"I0000 native log line\\n")  # what TensorFlow's C++ logging does
"""


@pytest.mark.tf
def test_tensorflow_s_own_log_lines_never_land_on_the_status_line(tmp_path: Any) -> None:
    import sys

    program = tmp_path / "prog.py"
    program.write_text(NATIVE_LOG_WHILE_RETRACING, encoding="utf-8")
    shown = _screen(_in_a_terminal([sys.executable, "-m", "tfretrace", "run", str(program)], tmp_path, "0"))
    native = [line for line in shown if "I0000 native log line" in line]
    assert len(native) == 3
    assert all(line == "I0000 native log line" for line in native)
