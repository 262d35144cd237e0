"""`tfretrace run` with its stderr relay (TF_CPP_MIN_LOG_LEVEL above 0): real signals, real streams.

The relay starts as the program begins to import TensorFlow when the user's level is above 0;
these programs import it first, then say so on stderr (what TensorFlow's import writes comes
before that line, under python too), and the tests compare what follows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tfretrace

pytestmark = pytest.mark.tf  # `tfretrace run` loads TensorFlow before the program

_PACKAGE = str(Path(tfretrace.__file__).parents[1])

# Its SIGTERM handler says goodbye on stderr and exits 3; a finally block writes once more.
_GRACEFUL = """\
import signal, sys, time
import tensorflow
sys.stderr.write("imported\\n")
sys.stderr.flush()

def on_term(signum, frame):
    print("prog: got SIGTERM, shutting down", file=sys.stderr, flush=True)
    sys.exit(3)

signal.signal(signal.SIGTERM, on_term)
try:
    open(sys.argv[1], "w").write("ready")
    time.sleep(60)
finally:
    sys.stderr.write("prog: finally done\\n")
    sys.stderr.flush()
"""


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": _PACKAGE, "NO_COLOR": "1", "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


def _killed_group(command: list[str], tmp_path: Path, name: str) -> tuple[int, str]:
    """Start ``command`` as a job of its own, SIGTERM its whole process group once it is ready."""
    ready = tmp_path / f"{name}.ready"
    proc = subprocess.Popen([*command, str(ready)], cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), proc.communicate(timeout=30)[1]
        time.sleep(0.2)  # in its sleep
        os.killpg(proc.pid, signal.SIGTERM)  # what `kill %1` and a CI cancel do: the whole job
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err.decode()


def test_the_relay_outlives_a_sigterm_to_the_whole_job(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(_GRACEFUL)
    plain_status, plain_err = _killed_group([sys.executable, "prog.py"], tmp_path, "plain")
    status, err = _killed_group([sys.executable, "-m", "tfretrace", "run", "prog.py"], tmp_path, "run")
    plain_err = plain_err.partition("imported\n")[2]
    assert (plain_status, plain_err) == (3, "prog: got SIGTERM, shutting down\nprog: finally done\n")
    assert status == plain_status, err
    # After TensorFlow's import (through the relay) and before tfretrace's report, whole.
    assert plain_err in err and err.index(plain_err) < err.index("tfretrace: "), err


# Bursts on both streams: big stderr writes (beyond a pipe's buffer), partial lines finished by
# the other stream, print() and raw os.write, each flushed where it is written.
_INTERLEAVED = """\
import os, sys
import tensorflow
sys.stderr.write("imported\\n")
sys.stderr.flush()

for i in range(40):
    os.write(2, b"e" * 150_000 + b" burst %d\\n" % i)
    print(f"out {i}", flush=True)
    sys.stderr.write(f"partial {i} ")
    sys.stderr.flush()
    os.write(1, b"raw %d\\n" % i)
    sys.stderr.write("ends here\\n")
    sys.stdout.write("no newline yet ")
    sys.stdout.flush()
    print("err line", i, file=sys.stderr)
print("last", flush=True)
"""


def _one_file(command: list[str], tmp_path: Path, name: str) -> bytes:
    log = tmp_path / name
    with open(log, "wb") as out:  # `> log 2>&1`
        done = subprocess.run(command, cwd=tmp_path, env=_env(), stdout=out, stderr=subprocess.STDOUT,
                              timeout=300, check=False)
    assert done.returncode == 0, log.read_bytes()[-2000:]
    return log.read_bytes()


def test_both_streams_into_one_file_keep_the_programs_order(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(_INTERLEAVED)
    plain = _one_file([sys.executable, "prog.py"], tmp_path, "plain.log").partition(b"imported\n")[2]
    monitored = _one_file([sys.executable, "-m", "tfretrace", "run", "prog.py"], tmp_path, "run.log")
    assert plain.count(b"\n") == 40 * 5 + 1  # the program's own lines, whole
    # What tfretrace adds (TensorFlow's import lines before, the report after) is around it.
    assert b"imported\n" + plain in monitored
    report = monitored.index(b"tfretrace: ")
    assert monitored.index(plain) + len(plain) <= report
