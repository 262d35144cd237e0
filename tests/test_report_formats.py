"""``report``/``run`` output for other tools: --format text|json|markdown, ``-o -`` for stdout."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

import sessions as S
import tfretrace
from cli_fakes import FakeMonitor
from tfretrace.cli import app as cli
from tfretrace.render import MarkdownRenderer, renderer_for

pytestmark = pytest.mark.usefixtures("clean_global_state")


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    S.mixed_session().save(path)
    return path


def test_report_format_json_writes_the_session_to_stdout(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(saved), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["functions"] == json.loads(saved.read_text())["functions"]
    assert err == ""


def test_report_dash_o_is_stdout_in_the_format_asked(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(saved), "-o", "-", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### tfretrace: ") and "| function | location |" in out
    assert cli.main(["report", str(saved), "-o", "-"]) == 0  # no format: the text report
    assert capsys.readouterr().out.startswith("tfretrace: ")


def test_report_md_file_and_format_over_extension(saved: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(saved), "-o", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text().startswith("### tfretrace: ")
    # --format names the format of a file whose name says none.
    assert cli.main(["report", str(saved), "--format", "json", "-o", str(tmp_path / "r.out")]) == 0
    assert tfretrace.load(tmp_path / "r.out").total_traces == S.mixed_session().total_traces
    capsys.readouterr()


def test_run_refuses_dash_o_and_a_format_with_nowhere_to_go(
    script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["-o", "-"], ["--format", "json"]):
        assert cli.main(["run", *args, str(script)]) == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("tfretrace: error: ")
    assert monitor.installed == []  # refused before the program ran


def test_run_format_json_to_a_file(script: Path, monitor: FakeMonitor, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.out"
    assert cli.main(["run", "--format", "json", "-o", str(out), str(script)]) == 0
    assert tfretrace.load(out).functions
    capsys.readouterr()


def _cells(row: str) -> list[str]:
    """A markdown table row split on the pipes that are not escaped."""
    return re.split(r"(?<!\\)\|", row)


def test_markdown_escapes_every_recorded_string() -> None:
    hostile = S.hostile()
    piped = replace(hostile, name="a|b`c` *d*", location="x|y.py:1")
    out = renderer_for("markdown").render(S.session(hostile, piped))
    assert isinstance(renderer_for("report.md"), MarkdownRenderer)
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert len({len(_cells(row)) for row in table}) == 1  # no name adds a column
    outside_code = re.sub(r"(`+).*?\1", "", out)  # what is left outside code spans
    outside_code = re.sub(r"```+python\n.*?\n\s*```+", "", outside_code, flags=re.S)
    assert "<script" not in outside_code and "<img" not in outside_code
    assert "*d*" not in outside_code


def test_compare_s_format_choices_are_its_renderer_s() -> None:
    from tfretrace.cli.compare_command import FORMATS
    from tfretrace.render.comparison import FORMATS as RENDERED

    assert FORMATS == RENDERED
