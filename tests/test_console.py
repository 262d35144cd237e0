"""One rich Console per output stream: colour and width from rich, explain coloured on a terminal."""

from __future__ import annotations

import io

import pytest

from tfretrace.cli import app as cli
from tfretrace.cli.lint_command import main as lint_main
from tfretrace.render._console import colored, console_for

pytestmark = pytest.mark.usefixtures("clean_global_state")


def test_the_console_of_a_pipe_is_plain_and_100_wide() -> None:
    console = console_for(io.StringIO(), {})
    assert (console.width, colored(console)) == (100, False)
    forced = console_for(io.StringIO(), {"FORCE_COLOR": "1", "COLUMNS": "72"})
    assert (forced.width, colored(forced)) == (72, True)
    # NO_COLOR wins over FORCE_COLOR (rich's reading of both conventions).
    assert not colored(console_for(io.StringIO(), {"FORCE_COLOR": "1", "NO_COLOR": "1"}))


@pytest.mark.parametrize("command", [["explain", "TFR001"], ["lint", "--explain", "TFR001"]])
def test_explain_is_coloured_on_a_coloured_console_and_plain_otherwise(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run() -> str:
        assert (cli.main(command) if command[0] == "explain" else lint_main(command[1:])) == 0
        return capsys.readouterr().out

    plain = run()
    assert "\x1b[" not in plain and plain.startswith("TFR001 shape-changed: ")
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = run()
    assert "\x1b[1mTFR001 shape-changed\x1b[0m" in coloured  # the title in bold
    assert "\x1b[1mWhy:" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert run() == plain


def test_lint_findings_are_styled_on_a_coloured_console_with_the_same_text(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re
    from pathlib import Path

    folder = Path(str(tmp_path))
    (folder / "m.py").write_text("import tensorflow as tf\n@tf.function\ndef f(x):\n    print(x)\n", encoding="utf-8")
    monkeypatch.chdir(folder)
    assert lint_main(["--no-cache", "m.py"]) == 1
    plain = capsys.readouterr().out
    assert "\x1b[" not in plain and "m.py:4:5: TFR108 " in plain
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert lint_main(["--no-cache", "m.py"]) == 1
    coloured = capsys.readouterr().out
    assert "\x1b[1;31mTFR108\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
