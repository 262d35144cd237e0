"""Record the per-kind fixture folders (tests/data/kinds/<kind>/) and write what they expect.

Usage: python tools/kind_fixtures.py [KIND ...]

For each folder (all, or the kinds named): runs ``program.py`` under ``tfretrace run --save session.json``
with real TensorFlow, then writes ``plan.json`` (the plan planned again from that session without
TensorFlow: tests/kind_fixtures.py) and ``expected.py`` (the program as ``fix --apply --unsafe-fixes``
edits it). Read both before committing them: they are what tests/test_fix_kinds.py holds the planner to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
    from kind_fixtures import FIXTURES, edited, plan_rows, replanned

    folders = [FIXTURES / name for name in argv] or sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p)
    for folder in folders:
        done = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", "session.json", "program.py"],
                              cwd=folder, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{folder.name}: the run failed\n{done.stderr[-2000:]}")
            return 1
        session = replanned(folder)
        (folder / "plan.json").write_text(json.dumps(plan_rows(session), indent=1) + "\n", encoding="utf-8")
        (folder / "expected.py").write_text(edited(folder, session), encoding="utf-8")
        print(f"{folder.name}: recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
