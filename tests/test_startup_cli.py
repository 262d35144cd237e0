"""What tfretrace loads before it has work to do: `--help`, the parsers of commands not chosen, the log relay."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The monitor's side, the session model, rich and each command's own module: none is needed to
# print the command list (issue 41 item 8). TensorFlow least of all.
NOT_FOR_HELP = ("tensorflow", "keras", "rich", "tfretrace.records.session", "tfretrace.runtime",
                "tfretrace.render.text", "tfretrace.cli.run_command", "tfretrace.cli.fix_command",
                "tfretrace.cli.compare_command", "tfretrace.cli.profile_command", "tfretrace.cli.lint_command",
                "tfretrace.fix", "tfretrace.compare", "tfretrace.records.catalogue", "tomllib", "hashlib")


def _loaded(tmp_path: Path, *argv: str) -> tuple[set[str], int, str]:
    """The modules ``python -m tfretrace ARGV`` imported, its status and its stdout."""
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    code = ("import sys, runpy\n"
            "sys.argv = ['tfretrace', *sys.argv[1:]]\n"
            "try:\n"
            "    runpy.run_module('tfretrace', run_name='__main__')\n"
            "except SystemExit as exc:\n"
            "    status = exc.code\n"
            "sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
            "sys.exit(status)\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    names = set(done.stderr.rpartition("\nMODULES ")[2].split())
    return names, done.returncode, done.stdout


def _among(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


def test_help_loads_no_command_module_session_model_rich_or_tensorflow(tmp_path: Path) -> None:
    names, status, out = _loaded(tmp_path, "--help")
    assert status == 0
    assert "tfretrace.cli.app" in names  # the command line itself did load
    assert _among(names, NOT_FOR_HELP) == []
    # Every command is still listed, with its one-line help.
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line[4:5].isalpha()]
    assert listed == ["run", "report", "explain", "fix", "compare", "profile", "lint", "completion"]


@pytest.mark.parametrize("command", ["fix", "compare", "profile"])
def test_a_commands_own_parser_loads_only_when_that_command_is_chosen(tmp_path: Path, command: str) -> None:
    names, status, out = _loaded(tmp_path, command, "--help")
    assert status == 0
    assert f"tfretrace.cli.{command}_command" in names
    others = {"fix", "compare", "profile"} - {command}
    assert _among(names, tuple(f"tfretrace.cli.{o}_command" for o in others)) == []
    assert out.startswith(f"usage: tfretrace {command}")  # its own usage, description and options
    assert {"fix": "--unsafe-fixes", "compare": "--tolerance", "profile": "merge"}[command] in out


def test_the_log_relay_process_loads_only_what_relaying_needs() -> None:
    # `tfretrace run` waits for this process (python -I -S) to start, fork the relay and end, at
    # every TensorFlow import under TF_CPP_MIN_LOG_LEVEL above 0. Here it finds no settings on
    # stdin and stops right after its imports.
    from tfretrace._tf import xla

    done = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", "-c", xla._BOOT,
                           str(ROOT / "src" / "tfretrace")], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, check=False)
    names = {line.split("|")[2].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2}
    assert {"tfretrace._tf.relay", "tfretrace._tf.xla_log", "pickle"} <= names  # it did start
    assert "EOFError" in done.stderr  # and stopped at reading its settings
    assert sorted(names & {"json", "dataclasses", "inspect", "tfretrace.records"}) == []
