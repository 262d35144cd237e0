"""Commands tfretrace prints for the next step name the tfretrace and python that are running."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from tfretrace.cli.invocation import python_command, tfretrace_command

BIN = Path(sys.executable).parent


def _path_without_bin() -> str:
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != BIN.resolve())


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_console_script_not_on_path_is_printed_by_its_path(elsewhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_without_bin())
    monkeypatch.setattr(sys, "argv", [str(BIN / "tfretrace"), "run"])
    words = shlex.split(tfretrace_command())
    assert len(words) == 1 and os.path.samefile(words[0], BIN / "tfretrace")
    # The program's interpreter is spelled the same way when PATH's python is another one.
    assert os.path.samefile(shlex.split(python_command())[0], sys.executable)


def test_the_bare_name_when_path_finds_this_very_script(elsewhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([str(BIN), _path_without_bin()]))
    monkeypatch.setattr(sys, "argv", [str(BIN / "tfretrace"), "run"])
    assert tfretrace_command() == "tfretrace"
    assert python_command() == "python" or os.path.samefile(python_command(), sys.executable)


def test_python_m_is_printed_with_its_interpreter(elsewhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_without_bin())
    monkeypatch.setattr(sys, "argv", [str(Path(__file__).parent / "x" / "__main__.py")])
    words = shlex.split(tfretrace_command())
    assert words[1:] == ["-m", "tfretrace"] and os.path.samefile(words[0], sys.executable)


def test_a_relative_path_keeps_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # make demo from the checkout: .venv/bin/tfretrace, not a bare name the shell would look up.
    script = tmp_path / ".venv" / "bin" / "tfretrace"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", _path_without_bin())
    monkeypatch.setattr(sys, "argv", [".venv/bin/tfretrace"])
    assert tfretrace_command() == ".venv/bin/tfretrace"
