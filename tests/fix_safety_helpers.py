"""Record programs under tfretrace, apply their plans to a copy, run the copy again: shared by the fix-safety tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def env(**extra: str) -> dict[str, str]:
    """This checkout's tfretrace first on the path, plus ``extra`` variables."""
    found = dict(os.environ)
    found["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), found.get("PYTHONPATH")) if p)
    found.update(extra)
    return found


def run(folder: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``folder``, output captured."""
    return subprocess.run([sys.executable, *args], cwd=folder, env=env(**extra), capture_output=True, text=True,
                          timeout=600, check=False)


@dataclass
class Applied:
    """One recorded run, and the program after ``tfretrace fix --apply`` (with the options given)."""

    folder: Path
    session: dict[str, Any]
    before: str  # the recorded run's stdout (tfretrace writes nothing there)
    fix_output: str
    originals: dict[str, str]

    def function(self, module: str) -> dict[str, Any]:
        """The one retracing function recorded in ``module``.py."""
        found = [f for f in self.session["functions"] if f["plan"] and f["location"].startswith(f"{module}.py:")]
        if not found:  # a trace made for the module's call (pfor, Keras): located where it was called
            found = [f for f in self.session["functions"] if f["plan"] and any(
                (e.get("call_site") or "").startswith(f"{module}.py:") for e in f["events"])]
        assert len(found) == 1, (module, [f["name"] for f in found])
        return found[0]

    def edited(self, module: str) -> bool:
        """Whether the fix changed ``module``.py."""
        return (self.folder / f"{module}.py").read_text() != self.originals[module]

    def rerun(self, modules: list[str], **extra: str) -> str:
        """The edited programs' stdout (``main.py`` runs each module; a crash prints ``NAME CRASH Error``)."""
        done = run(self.folder, "main.py", *modules, **extra)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout


def record_and_apply(source: Path, folder: Path, modules: list[str], *options: str) -> Applied:
    """Copy ``source`` to ``folder``, record ``main.py MODULES`` there, then ``tfretrace fix --apply OPTIONS``."""
    shutil.copytree(source, folder)
    originals = {m: (folder / f"{m}.py").read_text() for m in modules}
    recorded = run(folder, "-m", "tfretrace", "run", "--save", "s.json", "main.py", *modules)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    fixed = run(folder, "-m", "tfretrace", "fix", "s.json", "--apply", *options)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    session = json.loads((folder / "s.json").read_text())
    return Applied(folder, session, recorded.stdout, fixed.stdout, originals)


def lines_of(output: str, prefix: str) -> list[str]:
    """The lines one program printed (each starts with its own prefix, or its module name on a crash)."""
    return [line for line in output.splitlines() if line.split(" ", 1)[0] == prefix]
