"""`tfretrace completion`: scripts made from the parsers, checked in a real bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tfretrace.cli import app as cli


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["completion", shell]) == 0
    return capsys.readouterr().out


def _complete(script: str, *words: str) -> list[str]:
    """What bash completes for the command line ``words`` (the last word is being typed)."""
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the bash completion"
    line = " ".join(f"'{w}'" for w in words)
    call = f"COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _tfretrace"
    program = f"{script}\n{call}; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    done = subprocess.run([bash, "--norc", "-c", program], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_bash_completes_commands_options_and_causes(capsys: pytest.CaptureFixture[str]) -> None:
    script = _script("bash", capsys)
    assert _complete(script, "tfretrace", "re") == ["report"]
    assert _complete(script, "tfretrace", "run", "--sa") == ["--save", "--save-baseline"]
    assert _complete(script, "tfretrace", "run", "--pre") == ["--prevent"]
    assert _complete(script, "tfretrace", "lint", "--unsafe") == ["--unsafe-fixes"]  # the linter's own parser
    assert _complete(script, "tfretrace", "explain", "shape-") == ["shape-changed"]
    assert _complete(script, "tfretrace", "completion", "f") == ["fish"]
    for command in ("run", "explain", "lint", "completion"):
        assert _complete(script, "tfretrace", command, "--he") == ["--help"]  # offered once


def test_zsh_and_fish_scripts_name_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    zsh = _script("zsh", capsys)
    assert "bashcompinit" in zsh and "complete -o filenames -F _tfretrace tfretrace" in zsh
    fish = _script("fish", capsys)
    for command in ("run", "report", "explain", "fix", "lint", "completion"):
        assert f"__fish_seen_subcommand_from {command}" in fish
    assert '__fish_seen_subcommand_from run" -l save' in fish


def test_an_unknown_shell_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["completion", "powershell"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "invalid choice" in err
