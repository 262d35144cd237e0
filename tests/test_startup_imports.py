"""What `tfretrace run` loads beyond the program's imports: nothing of the planner when nothing retraced."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parent.parent

TINY = '''\
import tensorflow as tf


@tf.function
def f(x):
    return x * 2


print(float(f(tf.constant(1.0))))
'''

# Loaded only when something is planned, compared, prevented or highlighted in colour: each is
# a large share of tfretrace's start-up (issue 41 item 8).
DEFERRED = ("tfretrace.fix.kinds", "tfretrace.fix.planning.plan", "tfretrace.fix.applying", "tfretrace.compare",
            "tfretrace.runtime.prevent.runtime", "tfretrace.runtime.prevent.profile", "pygments", "rich.syntax")


def _imported(tmp_path: Path, *argv: str) -> tuple[set[str], str, str]:
    """The modules imported, stdout, and stderr without the import times."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    env.pop("TFRETRACE_PREVENT", None)
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names = {line.split("|")[2].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2}
    rest = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
    return names, done.stdout, rest


def test_a_run_that_never_retraces_loads_nothing_of_the_planner(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY, encoding="utf-8")
    plain, plain_out, _ = _imported(tmp_path, "tiny.py")
    tool, tool_out, _ = _imported(tmp_path, "-m", "tfretrace", "run", "tiny.py")
    assert tool_out.startswith(plain_out)  # the program's output first, byte for byte
    loaded = sorted(n for n in tool - plain if n.startswith(DEFERRED))
    assert loaded == []
    # tfretrace's own modules stay a small set (about 90 after the deferrals; the planner's kinds alone
    # are over 40 more). Counted by name: which other modules come along (rich, tomllib) depends on
    # what the TensorFlow and Keras of the environment already import (Keras 3 imports rich itself).
    assert len([n for n in tool - plain if n.split(".")[0] == "tfretrace"]) < 100
    # Deferred, not dropped: a function that retraced is planned as before.
    (tmp_path / "retrace.py").write_text(TINY.replace("print(float(f(tf.constant(1.0))))",
                                                      "for n in range(3):\n    f(tf.ones((n + 1,)))"),
                                         encoding="utf-8")
    tool, _, out = _imported(tmp_path, "-m", "tfretrace", "run", "--fix-plan", "retrace.py")
    assert {"tfretrace.fix.kinds", "tfretrace.fix.planning.plan"} <= tool
    assert "3 -> 1 trace" in out  # the grouped report's fix line (the long "Fix plan:" is -v's)
    # plan steps spell the saved-signature kind's name so as not to load the kinds: the same name.
    from tfretrace.fix.kinds import saved_signature
    from tfretrace.fix.planning.step import THROUGH_ANOTHER

    assert {saved_signature.NAME} == THROUGH_ANOTHER


# What a plain run that nothing retraced in still loaded in 89be6d9, each for work no output of
# it needs: the other commands' parsers, the source reader (for the session's file hashes), the
# readers of a saved session's prevention, lint and output parts, a notebook's cell reader, the
# fix probe, and the TOML reader outside any project (issue 41 item 8).
NOT_IN_A_PLAIN_RUN = ("tfretrace.cli.fix_command", "tfretrace.cli.profile_command", "tfretrace.cli.lint_command",
                      "tfretrace.cli.notebook_run", "tfretrace.fix.core.source", "tfretrace.records.prevention",
                      "tfretrace.records.lint_panel", "tfretrace.records.output", "tfretrace._tf.probe",
                      "tfretrace._tf.fresh", "tomllib")


def test_a_plain_run_loads_only_what_its_report_and_session_need(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY, encoding="utf-8")
    plain, plain_out, _ = _imported(tmp_path, "tiny.py")
    tool, tool_out, err = _imported(tmp_path, "-m", "tfretrace", "run", "tiny.py")
    assert tool_out == plain_out
    assert "1 function, 1 trace (0 retraces)" in err  # it did monitor, report and keep the session
    assert (tmp_path / ".tfretrace" / "last-session.json").is_file()
    loaded = sorted(n for n in tool - plain if n.startswith(NOT_IN_A_PLAIN_RUN))
    assert loaded == []


# What the program sees of its log level and its stderr until it imports TensorFlow: under
# python, the user's level and the file stderr was sent to.
_SEES = '''\
import os, stat, sys
print(os.environ.get("TF_CPP_MIN_LOG_LEVEL"), stat.S_ISREG(os.fstat(2).st_mode), flush=True)
sys.stderr.write("own line\\n")
'''


def test_a_program_that_never_imports_tensorflow_keeps_its_level_and_its_stderr(tmp_path: Path) -> None:
    # tfretrace lowers the level and starts its stderr relay as TensorFlow's import begins (the
    # compile log needs both): a program that never imports it starts no relay process and runs
    # with its own settings, as under python (89be6d9 did both before the program's first line).
    (tmp_path / "sees.py").write_text(_SEES, encoding="utf-8")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    outs = []
    for argv in (["sees.py"], ["-m", "tfretrace", "run", "sees.py"]):
        with open(tmp_path / "err.txt", "wb") as err:  # `2> err.txt`
            done = subprocess.run([sys.executable, *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=err, text=True, timeout=300, check=False)
        assert done.returncode == 0, (tmp_path / "err.txt").read_text()
        outs.append((done.stdout, (tmp_path / "err.txt").read_text().splitlines()[0]))
    assert outs[0] == ("3 True\n", "own line")
    assert outs[1] == outs[0]


_SETS_ITS_LEVEL = '''\
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
import tensorflow as tf
print(os.environ["TF_CPP_MIN_LOG_LEVEL"], float(tf.reduce_sum(tf.ones((3,)))))
'''


def test_the_level_a_program_sets_before_importing_tensorflow_is_the_one_it_keeps(tmp_path: Path) -> None:
    # The level is lowered for TensorFlow's import and put back after it: the program's own value
    # at that import (89be6d9 put back the value the command was started with, "3" here).
    (tmp_path / "sets.py").write_text(_SETS_ITS_LEVEL, encoding="utf-8")
    _plain, plain_out, _ = _imported(tmp_path, "sets.py")
    _tool, tool_out, err = _imported(tmp_path, "-m", "tfretrace", "run", "sets.py")
    assert plain_out == "1 3.0\n"
    assert tool_out == plain_out
    assert "tfretrace: 0 functions, 0 traces" in err  # the run was monitored and reported


def test_the_cyclic_gc_leaves_tfretraces_own_objects_to_the_program_as_python_would(tmp_path: Path) -> None:
    # Every full collection walked tfretrace's module objects again; TensorFlow's import makes many
    # (bench/startup.py: +0.20 s of CPU over python for a script that imports TensorFlow, +0.07 s
    # frozen). Frozen before the program's first line, the program's gc sees what python's does.
    program = tmp_path / "gc_view.py"
    program.write_text(
        "import gc\n"
        "mine = [o for o in gc.get_objects() if getattr(type(o), '__module__', '').startswith('tfretrace')]\n"
        "print(len(mine), gc.isenabled())\n"
        "class Cycle:\n"
        "    pass\n"
        "a = Cycle(); a.me = a\n"
        "del a\n"
        "print(gc.collect() >= 1)\n",  # the program's own cycles are collected as under python
        encoding="utf-8",
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    python = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, env=env, check=True)
    run = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--no-progress", str(program)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert python.stdout == "0 True\nTrue\n"
    assert run.stdout == python.stdout
