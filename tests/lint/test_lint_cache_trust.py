"""A findings cache is a speed-up only: an entry it did not write itself, or a mistyped one, is a miss."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tfretrace import __version__
from tfretrace.cli.lint_command import main
from tfretrace.lint import runner
from tfretrace.lint.checker import ALL_CODES

BAD = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    print(x)\n    return x\n"


def _findings(capsys: pytest.CaptureFixture[str]) -> list[str]:
    main(["--no-config", ".", "--format", "json"])
    return sorted(f["code"] for f in json.loads(capsys.readouterr().out)["findings"])


def _index(folder: Path) -> Path:
    found = sorted((folder / ".tfretrace_cache").glob("lint-*.json"))
    return found[-1] if found else folder / ".tfretrace_cache" / f"lint-{__version__}-2.json"


def _every_key(data: bytes) -> list[str]:
    """Keys anyone can compute from the file, for the rule sets a run may use."""
    keys = []
    for codes in (ALL_CODES, tuple(sorted(ALL_CODES))):
        for salt in (("\0".join(codes) + "\0").encode(), (__version__ + "\0" + "\0".join(codes) + "\0").encode()):
            keys.append(hashlib.sha256(salt + b"py\0" + data).hexdigest())
    return keys


@pytest.mark.parametrize(
    "entry",
    [
        [[], None, 6],  # clean, as an attacker writes it
        [[], None, 6, "0" * 64],  # with a made-up signature
        [[["x", 1, "TFR001", "m", None, "f"]], None, 6],  # mistyped: a line that is a string
        [[[1, 1, "NOPE", "m", None, "f"]], None, 6],  # a code no rule has
        [[[1]], None, 6],  # too short
        [None, ["skipped", True], "6"],
        "not a list",
    ],
)
def test_a_committed_cache_never_hides_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], entry: object
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.py").write_text(BAD)
    expected = _findings(capsys)
    assert expected  # the file has a finding
    index = _index(tmp_path)
    forged = {key: entry for key in _every_key(BAD.encode())}
    for name in {index.name, f"lint-{__version__}-2.json", f"lint-{__version__}-3.json"}:
        (index.parent / name).write_text(json.dumps(forged))
    assert _findings(capsys) == expected


def test_the_cache_still_saves_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.py").write_text(BAD)
    calls: list[str] = []
    real = runner.lint_content

    def counted(data: bytes, shown: str, codes: list[str]) -> runner.FileResult:
        calls.append(shown)
        return real(data, shown, codes)

    monkeypatch.setattr(runner, "lint_content", counted)
    first = _findings(capsys)
    second = _findings(capsys)
    assert first == second and calls == ["bad.py"]
