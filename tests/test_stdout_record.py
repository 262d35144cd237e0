"""The stdout record under ``run --save`` is Python's own stream to the program: attributes, order, pipes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Python buffers stdout unless told not to; both ways must look the same under --save.
BUFFERING = {"buffered": None, "unbuffered": "1"}


def _env(unbuffered: str | None) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    return env


def _both(tmp_path: Path, source: str, unbuffered: str | None, *args: str,
          **kw: object) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """The program under python, then under ``tfretrace run --save s.json``."""
    (tmp_path / "p.py").write_text(source)
    common = {"cwd": tmp_path, "env": _env(unbuffered), "timeout": 300, "check": False, **kw}
    plain = subprocess.run([sys.executable, "p.py", *args], **common)  # type: ignore[call-overload]
    saved = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", "s.json", "p.py", *args],
                           **common)  # type: ignore[call-overload]
    return plain, saved


def _digest(tmp_path: Path) -> dict[str, object]:
    return json.loads((tmp_path / "s.json").read_text())["output"]["stdout"]  # type: ignore[no-any-return]


ATTRIBUTES = """\
import sys
out = sys.stdout
print(repr(out), repr(out.buffer), out is sys.__stdout__, out.name, out.mode, out.line_buffering,
      out.write_through, out.encoding, out.errors)
raw = getattr(out.buffer, "raw", out.buffer)
print(raw.name, raw.mode, raw.closefd, isinstance(raw, __import__("io").FileIO), out.buffer.__sizeof__())
"""


@pytest.mark.parametrize("unbuffered", BUFFERING.values(), ids=list(BUFFERING))
def test_the_program_sees_pythons_own_stdout_attributes(tmp_path: Path, unbuffered: str | None) -> None:
    plain, saved = _both(tmp_path, ATTRIBUTES, unbuffered, capture_output=True)
    assert plain.returncode == saved.returncode == 0, saved.stderr[-2000:]
    assert saved.stdout == plain.stdout
    assert _digest(tmp_path)["sha256"] == hashlib.sha256(plain.stdout).hexdigest()


ARGPARSE = """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("out", type=argparse.FileType("w"))
out = parser.parse_args().out
out.write("written to stdout\\n")
print("wrote", out.name, out.mode, file=__import__("sys").stderr)
"""


def test_an_argparse_filetype_given_dash_writes_to_the_record(tmp_path: Path) -> None:
    plain, saved = _both(tmp_path, ARGPARSE, None, "-", capture_output=True)
    assert plain.returncode == saved.returncode == 0, saved.stderr[-2000:]
    assert saved.stdout == plain.stdout == b"written to stdout\n"
    assert b"wrote <stdout> w\n" in saved.stderr
    assert _digest(tmp_path)["lines"] == 1


# Silence a call, put Python's stream back the common way, print there and to sys.__stdout__.
BACK_TO_DUNDER = """\
import io, sys
print("a")
sys.stdout = io.StringIO()
print("hidden")
sys.stdout = sys.__stdout__
print("b")
sys.__stdout__.write("c\\n")
print("d")
"""


@pytest.mark.parametrize("unbuffered", BUFFERING.values(), ids=list(BUFFERING))
def test_prints_after_stdout_is_set_back_to_dunder_stdout_are_recorded_in_order(
        tmp_path: Path, unbuffered: str | None) -> None:
    plain, saved = _both(tmp_path, BACK_TO_DUNDER, unbuffered, capture_output=True)
    assert plain.stdout == saved.stdout == b"a\nb\nc\nd\n"
    digest = _digest(tmp_path)
    assert (digest["lines"], digest["sha256"]) == (4, hashlib.sha256(plain.stdout).hexdigest())


# Many unflushed lines with stderr lines between them: where the stderr lines land in one shared
# file depends on when, and in what blocks, stdout reaches fd 1.
INTERLEAVED = """\
import sys
for i in range(3000):
    print("out", i, "x" * 20)
    if i % 250 == 0:
        sys.stderr.write(f"err {i}\\n")
"""


def test_stdout_blocks_land_among_stderr_lines_as_under_python(tmp_path: Path) -> None:
    with (tmp_path / "plain.log").open("wb") as a, (tmp_path / "saved.log").open("wb") as b:
        (tmp_path / "p.py").write_text(INTERLEAVED)
        env = _env(None)  # block-buffered, as python is into a file
        subprocess.run([sys.executable, "p.py"], cwd=tmp_path, env=env, stdout=a, stderr=subprocess.STDOUT,
                       timeout=300, check=True)
        subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", "s.json", "p.py"], cwd=tmp_path,
                       env=env, stdout=b, stderr=subprocess.STDOUT, timeout=300, check=True)
    plain, saved = (tmp_path / "plain.log").read_bytes(), (tmp_path / "saved.log").read_bytes()
    assert saved.startswith(plain)  # then tfretrace's own report on stderr
    printed = "".join(f"out {i} {'x' * 20}\n" for i in range(3000)).encode()  # blocks cut lines: no filter
    assert _digest(tmp_path)["sha256"] == hashlib.sha256(printed).hexdigest()


MANY_LINES = """\
for i in range(200000):
    print("line", i)
"""


def _into_head(tmp_path: Path, *command: str) -> tuple[int, bytes, bytes]:
    """``command | head -1``: the reader takes one line and closes the pipe."""
    with subprocess.Popen(command, cwd=tmp_path, env=_env(None), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        return proc.wait(timeout=300), first, err


def test_a_reader_that_goes_away_gives_pythons_broken_pipe_and_keeps_the_session(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text(MANY_LINES)
    plain = _into_head(tmp_path, sys.executable, "p.py")
    saved = _into_head(tmp_path, sys.executable, "-m", "tfretrace", "run", "--save", "s.json", "p.py")
    assert plain[:2] == saved[:2] == (1, b"line 0\n")
    for err in (plain[2], saved[2]):
        assert b"BrokenPipeError" in err
    digest = _digest(tmp_path)
    assert digest["lines"] > 0 and digest["line_sha256"][0] == hashlib.sha256(b"line 0\n").hexdigest()[:8]
