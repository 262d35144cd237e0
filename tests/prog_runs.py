"""Running a test's program in its folder with this checkout's tfretrace: its stdout results and TensorFlow's counts.

The fix tests on real TensorFlow write a program that prints its results and, last, one
``traces NAME N`` line per function from ``experimental_get_tracing_count()``; these helpers run it
(or ``python -m tfretrace ...``) and split the two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def run_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``folder``, with this checkout's src first on PYTHONPATH and TensorFlow quiet."""
    root = Path(__file__).resolve().parents[1]
    path = os.pathsep.join(p for p in (str(root / "src"), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", PYTHONPATH=path)
    return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


@dataclass(frozen=True)
class Ran:
    """The program's stdout but its last lines, and TensorFlow's own trace count per function."""

    results: list[str]
    traces: dict[str, int]


def ran_program(folder: Path, script: str = "prog.py", *args: str) -> Ran:
    """Run ``script`` (exit 0 asserted): its result lines and its ``traces NAME N`` counts."""
    done = run_in(folder, script, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    counts = {line.split()[1]: int(line.split()[2]) for line in lines if line.startswith("traces ")}
    return Ran([line for line in lines if not line.startswith("traces ")], counts)


def saved_session(folder: Path, script: str = "prog.py", *args: str, name: str = "s.json") -> dict[str, Any]:
    """``tfretrace run --save NAME SCRIPT ARGS`` in ``folder`` (exit 0 asserted): the saved session."""
    done = run_in(folder, "-m", "tfretrace", "run", "--save", name, script, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    session: dict[str, Any] = json.loads((folder / name).read_text())
    return session


def recorded(folder: Path, program: str, *args: str) -> tuple[Ran, dict[str, dict[str, Any]]]:
    """``program`` written to ``folder/prog.py``, run as python runs it and recorded by ``tfretrace run --save
    s.json``: what it printed and TensorFlow counted, and the saved functions by name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prog.py").write_text(program)
    before = ran_program(folder, "prog.py", *args)
    functions = saved_session(folder, "prog.py", *args)["functions"]
    by_name = {f["name"]: f for f in functions}
    assert len(by_name) == len(functions), "two recorded functions share a name"
    return before, by_name


def edited_steps(function: dict[str, Any]) -> list[dict[str, Any]]:
    """A saved function's plan steps that edit the program."""
    return [s for s in function["plan"] if s.get("edits")]


def applied_copy(folder: Path, *flags: str) -> Path:
    """``folder`` copied beside it (``applied``) and fixed there by ``tfretrace fix s.json --apply FLAGS`` (exit 0)."""
    import shutil

    copy = folder.parent / "applied"
    shutil.copytree(folder, copy)
    done = run_in(copy, "-m", "tfretrace", "fix", "s.json", "--apply", *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    return copy
