"""``tfretrace run`` keeps the last run's session in the project's own ``.tfretrace/`` folder, never outside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_fakes import FakeMonitor
from tfretrace.cli import app as cli
from tfretrace.records.session import load

pytestmark = pytest.mark.usefixtures("clean_global_state")


def test_a_run_keeps_its_session_ignored_by_git(script: Path, monitor: FakeMonitor, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", str(script)]) == 0
    kept = tmp_path / ".tfretrace" / "last-session.json"
    assert load(kept).to_dict()["functions"] == monitor.session.to_dict()["functions"]
    assert (tmp_path / ".tfretrace" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert "--save" not in capsys.readouterr().err


def test_a_project_with_a_tfretrace_table_keeps_it_at_its_top(script: Path, monitor: FakeMonitor, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.tfretrace.run]\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert cli.main(["run", str(script)]) == 0
    assert (tmp_path / ".tfretrace" / "last-session.json").is_file()
    assert not (tmp_path / "sub" / ".tfretrace").exists()


@pytest.mark.parametrize("link", [".tfretrace", ".tfretrace/last-session.json"])
def test_a_symbolic_link_never_takes_the_session_outside_the_project(
    link: str, script: Path, monitor: FakeMonitor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "last-session.json").write_text('{"mine": 1}', encoding="utf-8")
    if link == ".tfretrace":
        (project / ".tfretrace").symlink_to(outside, target_is_directory=True)
    else:
        (project / ".tfretrace").mkdir()
        (project / link).symlink_to(outside / "last-session.json")
    monkeypatch.chdir(project)
    assert cli.main(["run", str(script)]) == 0
    assert sorted(p.name for p in outside.iterdir()) == ["last-session.json"]
    assert json.loads((outside / "last-session.json").read_text(encoding="utf-8")) == {"mine": 1}
    # Not kept: the report says how to save the run instead.
    assert "--save" in capsys.readouterr().err
