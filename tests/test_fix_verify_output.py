"""``run --save`` digests the program's stdout; ``fix --verify`` says whether the edited run's matched."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from schema_helpers import schema_errors
from tfretrace.records.output import Digester, OutputDigest, first_difference
from tfretrace.records.session import SessionFormatError, load

# Shapes 1..4: four traces; the plan's edit (a signature with an open dimension) makes one. The
# sums go to stdout and do not depend on the edit; TensorFlow's own count goes to stdout only
# when asked (--count-on-stdout): then the edit changes what the program prints.
PROGRAM = """\
import sys

import tensorflow as tf


@tf.function
def step(x):
    return tf.reduce_sum(x * 2.0)


for n in range(1, 5):
    print(float(step(tf.ones([n]))))
if "--print-noise" in sys.argv:
    import os
    print("run", os.urandom(4).hex())  # another value on every run
count = step.experimental_get_tracing_count()
print("traces", count, file=sys.stdout if "--count-on-stdout" in sys.argv else sys.stderr)
"""


def _tfretrace(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tfretrace", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=600, check=False)


def _recorded(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "train.py").write_text(PROGRAM)
    done = _tfretrace("run", "--save", "s.json", "train.py", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _verify(tmp_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    done = _tfretrace("fix", "s.json", "--verify", "--", "python", "train.py", *args, cwd=tmp_path)
    text = done.stdout.decode()
    assert done.returncode == 0, text[-2000:] + done.stderr.decode()[-2000:]
    assert "input_signature" in text or "reduce_retracing" in text, text[-2000:]  # an edit was verified
    data = json.loads((tmp_path / "s.json").read_text())
    assert schema_errors(data) == []  # the session fix rewrote still follows the published schema
    return data["verified_output"], text


def _stdout_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith("stdout: "))


def _traces_printed(log: Path) -> list[int]:
    """TensorFlow's own count, as the program printed it (experimental_get_tracing_count)."""
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("traces ")]


@pytest.mark.tf
def test_run_save_records_a_digest_of_exactly_what_the_program_printed(tmp_path: Path) -> None:
    done = _recorded(tmp_path)
    data = json.loads((tmp_path / "s.json").read_text())
    assert schema_errors(data) == []
    stdout = data["output"]["stdout"]
    # The program's stdout, byte for byte (the report and the count went to stderr).
    assert stdout["sha256"] == hashlib.sha256(done.stdout).hexdigest()
    assert (stdout["bytes"], stdout["lines"], stdout["terminal"]) == (len(done.stdout), 4, False)
    assert stdout["line_sha256"] == [hashlib.sha256(line).hexdigest()[:8] for line in done.stdout.splitlines(True)]
    assert b"traces 4" in done.stderr  # TensorFlow's count in the recorded run
    assert set(stdout) == {"bytes", "lines", "sha256", "line_sha256", "terminal"}  # digests and counts only


@pytest.mark.tf
def test_verify_an_edit_that_keeps_the_output_is_same(tmp_path: Path) -> None:
    _recorded(tmp_path)
    verified, text = _verify(tmp_path)
    assert verified == {"verdict": "same", "compared_with": "recorded", "first_difference_line": None,
                        "edited_as_unedited": None}
    assert _stdout_line(text).startswith("stdout: same:")
    assert _traces_printed(tmp_path / "s.verify.log") == [1]  # the edit took effect: TensorFlow traced once
    assert not (tmp_path / "s.verify.unedited.log").exists()  # no second run where the outputs matched


@pytest.mark.tf
def test_verify_an_edit_that_changes_the_output_differs_and_names_the_line(tmp_path: Path) -> None:
    _recorded(tmp_path, "--count-on-stdout")  # prints "traces 4" on line 5
    verified, text = _verify(tmp_path, "--count-on-stdout")
    # The unedited copy prints what the recorded run did, so the edit (4 traces -> 1) is to blame.
    assert verified == {"verdict": "differs", "compared_with": "recorded", "first_difference_line": 5,
                        "edited_as_unedited": False}
    assert _stdout_line(text).startswith("stdout: differs:")
    assert _traces_printed(tmp_path / "s.verify.log") == [1]
    assert _traces_printed(tmp_path / "s.verify.unedited.log") == [4]


@pytest.mark.tf
def test_verify_against_an_altered_digest_is_not_same_and_blames_no_edit(tmp_path: Path) -> None:
    _recorded(tmp_path)
    data = json.loads((tmp_path / "s.json").read_text())
    stdout = data["output"]["stdout"]
    stdout["sha256"] = hashlib.sha256(b"something else").hexdigest()
    stdout["line_sha256"][2] = "00000000"
    (tmp_path / "s.json").write_text(json.dumps(data))
    verified, text = _verify(tmp_path)
    # Neither copy prints the recorded output: it is not reproducible, and edited == unedited.
    assert verified == {"verdict": "unstable", "compared_with": "unedited", "first_difference_line": None,
                        "edited_as_unedited": True}
    assert _stdout_line(text).startswith("stdout: unstable:")


@pytest.mark.tf
def test_verify_of_a_program_whose_output_changes_every_run_is_unstable_not_blamed_on_the_edit(
        tmp_path: Path) -> None:
    _recorded(tmp_path, "--print-noise")
    verified, text = _verify(tmp_path, "--print-noise")
    assert verified == {"verdict": "unstable", "compared_with": "unedited", "first_difference_line": 5,
                        "edited_as_unedited": False}
    assert _stdout_line(text).startswith("stdout: unstable:")
    assert _traces_printed(tmp_path / "s.verify.log") == [1]
    assert _traces_printed(tmp_path / "s.verify.unedited.log") == [4]


@pytest.mark.tf
def test_verify_of_a_session_without_a_digest_says_not_recorded(tmp_path: Path) -> None:
    _recorded(tmp_path)
    data = json.loads((tmp_path / "s.json").read_text())
    del data["output"]  # as an older tfretrace saved it
    (tmp_path / "s.json").write_text(json.dumps(data))
    verified, text = _verify(tmp_path)
    assert verified["verdict"] == "not-recorded"
    assert verified["compared_with"] is None
    assert _stdout_line(text).startswith("stdout: not-recorded:")


MINIMAL = {"schema": 1, "tool": {"name": "tfretrace", "version": "0"}, "functions": []}
GOOD = {"bytes": 4, "lines": 2, "sha256": "a" * 64, "line_sha256": ["0123abcd", "89ef0000"], "terminal": False}


@pytest.mark.parametrize(("field", "value", "names"), [
    ("sha256", "A" * 64, "output.stdout.sha256"),
    ("sha256", 5, "output.stdout.sha256"),
    ("bytes", -1, "output.stdout.bytes"),
    ("lines", True, "output.stdout.lines"),
    ("lines", 9, "output.stdout.lines"),  # more lines than bytes
    ("line_sha256", ["0123abcd"], "output.stdout.line_sha256"),  # one digest for two lines
    ("line_sha256", ["0123abcd", "zzzzzzzz"], "output.stdout.line_sha256"),
    ("line_sha256", "0123abcd", "output.stdout.line_sha256"),
    ("terminal", "yes", "output.stdout.terminal"),
])
def test_a_malformed_digest_is_a_one_line_error(tmp_path: Path, field: str, value: Any, names: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**MINIMAL, "output": {"stdout": {**GOOD, field: value}}}))
    with pytest.raises(SessionFormatError) as caught:
        load(path)
    assert names in str(caught.value) and "\n" not in str(caught.value)


def test_a_malformed_digest_stops_fix_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({**MINIMAL, "output": {"stdout": {**GOOD, "sha256": "x"}}}))
    done = subprocess.run([sys.executable, "-m", "tfretrace", "fix", "s.json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "output.stdout.sha256" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_older_session_loads_without_a_digest(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(MINIMAL))
    assert load(path).stdout is None
    path.write_text(json.dumps({**MINIMAL, "output": {"stdout": GOOD}}))
    assert load(path).stdout == OutputDigest.from_dict(GOOD)


def test_the_digest_does_not_depend_on_how_the_bytes_were_split() -> None:
    text = b"alpha\nbeta\n\ngamma without newline"
    whole, pieces = Digester(), Digester()
    whole.feed(text)
    for at in range(len(text)):
        pieces.feed(text[at:at + 1])
    assert whole.digest() == pieces.digest()
    assert whole.digest().lines == 4
    assert whole.digest().sha256 == hashlib.sha256(text).hexdigest()


def test_first_difference_names_the_first_line_that_parts() -> None:
    def digest(text: bytes) -> OutputDigest:
        made = Digester()
        made.feed(text)
        return made.digest()

    assert first_difference(digest(b"a\nb\nc\n"), digest(b"a\nb\nc\n")) is None
    assert first_difference(digest(b"a\nb\nc\n"), digest(b"a\nX\nc\n")) == 2
    assert first_difference(digest(b"a\nb\n"), digest(b"a\nb\nc\n")) == 3
    assert first_difference(digest(b"a\nb"), digest(b"a\nb\n")) == 2  # only a newline added


def test_stdout_and_stderr_keep_their_order_when_they_share_a_file(tmp_path: Path) -> None:
    # The digest is taken in the process, synchronously: a relay on fd 1 would let the warnings
    # (stderr) overtake the lines printed before them in one file.
    (tmp_path / "p.py").write_text(
        "import sys\nfor i in range(20):\n    print('out', i, flush=True)\n    sys.stderr.write(f'err {i}\\n')\n"
    )
    plain = subprocess.run([sys.executable, "p.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60, check=True)
    monitored = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", "s.json", "p.py"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=True)
    assert monitored.stdout.startswith(plain.stdout)
    digest = json.loads((tmp_path / "s.json").read_text())["output"]["stdout"]
    assert digest["lines"] == 20
    printed = b"".join(line for line in plain.stdout.splitlines(True) if line.startswith(b"out"))
    assert digest["sha256"] == hashlib.sha256(printed).hexdigest()
