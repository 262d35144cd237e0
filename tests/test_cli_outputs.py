"""Every option that writes a file: never over Python source, a notebook, the program or an input."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessions as S
from cli_fakes import FakeMonitor
from tfretrace.cli import app as cli
from tfretrace.cli import lint_command
from tfretrace.compare.baseline import baseline_of, load_baseline
from tfretrace.integrations.pytest_baseline import BaselineGate

HELPER = "def helper():\n    return 1\n"


def _one_error_line(err: str) -> None:
    assert err.count("\n") == 1 and "error: " in err, err


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "gui.pyw").write_text(HELPER)
    (tmp_path / "analysis.ipynb").write_text('{"cells": [], "nbformat": 4}')
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    (tmp_path / "report.txt").symlink_to(tmp_path / "helper.py")  # a link to source is source
    S.mixed_session().save(tmp_path / "run.json")
    return tmp_path


@pytest.mark.parametrize("args", [
    ["run", "--save-baseline", "{prog}", "{prog}"],  # the program itself
    ["run", "--save-baseline", "helper.py", "{prog}"],
    ["run", "--save-baseline", "gui.pyw", "{prog}"],
    ["run", "--save-baseline", "analysis.ipynb", "{prog}"],
    ["run", "--save-baseline", "config.json", "{prog}"],  # someone's JSON, not a baseline
    ["run", "--save-baseline", "report.txt", "{prog}"],
    ["run", "-o", "report.txt", "{prog}"],
    ["report", "run.json", "-o", "report.txt"],
    ["report", "run.json", "-o", "run.json"],  # an input
])
def test_no_output_option_replaces_source_or_the_program(
    args: list[str], files: Path, script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.read_bytes() for p in [*files.iterdir(), script] if p.is_file()}
    assert cli.main([a.format(prog=script) for a in args]) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    _one_error_line(err)
    assert out == ""
    assert monitor.installed == []  # refused before the program runs
    assert {p: p.read_bytes() for p in before} == before


def test_lint_output_is_checked_by_the_same_rule(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for target in ("report.txt", "analysis.ipynb"):
        assert lint_command.main(["helper.py", "-o", target, "--no-cache"]) == 2
        _one_error_line(capsys.readouterr().err)
    assert (files / "helper.py").read_text() == HELPER


def test_save_baseline_replaces_an_earlier_baseline_or_writes_a_new_one(
    files: Path, script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline_of(S.mixed_session()).save(files / "old.json")
    for name in ("old.json", "new.json"):
        assert cli.main(["run", "--save-baseline", name, str(script)]) in (0, 1)
        assert load_baseline(files / name).functions
    capsys.readouterr()


def test_the_pytest_baseline_is_never_written_over_source(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(HELPER)
    with pytest.raises(ValueError, match="overwrite"):
        BaselineGate.open(str(tmp_path / "conftest.py"), update=True)
    assert (tmp_path / "conftest.py").read_text() == HELPER
