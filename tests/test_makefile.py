"""The Makefile's user-facing targets: the demo never changes the checkout, lint-self lints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Matrix rows leave it out (tools/matrix.py): make's targets build and use .venv, the reference environment.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parent.parent
# The venv the tests run in: its tfretrace (with this checkout on PYTHONPATH) stands in for .venv's.
BIN = Path(sys.executable).parent


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _checkout(tmp_path: Path, *files: str) -> Path:
    """A fresh git repository holding the named files of this checkout, committed."""
    repo = tmp_path / "repo"
    for name in files:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "checkout")
    return repo


def _make(repo: Path, target: str) -> subprocess.CompletedProcess[str]:
    assert shutil.which("make"), "make is needed (the README's set-up commands use it)"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1")
    # STAMP= : no venv creation; BIN: this test run's interpreter and scripts.
    return subprocess.run(["make", "-s", target, f"BIN={BIN}", "STAMP="], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.tf
def test_demo_and_the_commands_it_suggests_leave_the_checkout_unchanged(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, "Makefile", ".gitignore", "examples/demo_train.py")
    demo = _make(repo, "demo")
    assert demo.returncode == 0, demo.stderr[-2000:]
    # A command wider than the terminal goes on after a backslash: one command per label.
    lines = re.sub(r" \\\n *", " ", demo.stdout + demo.stderr).splitlines()
    checks = [line for line in lines if line.startswith("Check: ")]
    applies = [line for line in lines if line.startswith("Apply: ")]
    assert len(checks) == 1 and "--verify" in shlex.split(checks[0]), lines[-5:]
    assert len(applies) == 1, lines[-5:]
    # Follow both lines exactly as printed, in a shell whose PATH lacks the venv (nothing says to
    # activate it): each must name the tfretrace and the python that ran the demo.
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != BIN.resolve())
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1", PATH=path)
    check = checks[0].removeprefix("Check: ")
    verified = subprocess.run(check, shell=True, cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
    assert verified.returncode == 0, (check, verified.stderr[-2000:])
    assert "Verified on a copy" in verified.stdout
    # Follow the demo's last line as a new user would, then the checkout must be as committed.
    apply = applies[0].removeprefix("Apply: ")
    assert "--apply" in shlex.split(apply)
    applied = subprocess.run(apply, shell=True, cwd=repo, env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert applied.returncode == 0, (apply, applied.stderr)
    assert "Applied:" in applied.stdout  # the edits went somewhere ...
    assert _git(repo, "status", "--porcelain") == ""  # ... but not into a tracked file


def test_lint_self_lints_tfretraces_own_sources(tmp_path: Path) -> None:
    clean = _make(ROOT, "lint-self")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Found 0 findings" in clean.stdout
    # A mistake planted in a copy of the sources makes the target fail.
    repo = _checkout(tmp_path, "Makefile", "src/tfretrace/__init__.py")
    (repo / "src/tfretrace/planted.py").write_text(
        "import tensorflow as tf\n@tf.function\ndef f(x):\n    print(x)\n    return x\n", encoding="utf-8")
    (repo / "bench").mkdir()
    (repo / "tools").mkdir()
    planted = _make(repo, "lint-self")
    assert planted.returncode != 0 and "planted.py:4:5: TFR108" in planted.stdout, planted.stdout


# apt-get's dry-run lines (`apt-get install -s`): an upgrade of an installed package, a new one.
_APT_PLAN = """\
Inst perl-base [5.36.0-7] (5.36.0-7+deb12u2 Debian:12.12/stable [amd64])
Inst chromium-common (142.0 Debian-Security:12/stable-security [amd64])
1 upgraded, 1 newly installed, 0 to remove and 3 not upgraded.
"""


def _stand_in_path(tmp_path: Path) -> tuple[str, Path]:
    """A PATH with sh, make and a stand-in apt-get that logs its calls, and no chromium."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    (tmp_path / "plan.txt").write_text(_APT_PLAN)
    (bin_dir / "apt-get").write_text(
        f'#!/bin/sh\necho "apt-get $*" >> {log}\n'
        f'case "$*" in *" -s "*) cat {tmp_path / "plan.txt"} ;; *" -y "*) echo "Setting up chromium-common" ;; esac\n')
    (bin_dir / "apt-get").chmod(0o755)
    for tool in ("sh", "make", "echo", "id", "sed", "grep", "cat"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir), log


def test_make_test_announces_the_system_install_before_it_and_no_apt_skips_it(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, "Makefile")
    path, log = _stand_in_path(tmp_path)
    # Without NO_APT whatever the suite was started with (`NO_APT=1 make test` is the README's way
    # to keep the system as it is): this part asserts what happens when it is not set.
    env = {k: v for k, v in os.environ.items() if k != "NO_APT"} | {"PATH": path}
    done = subprocess.run(["make", "-s", "chromium"], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "apt-get" in done.stdout and "NO_APT=1" in done.stdout
    # apt's dry run came first, and what it would change was printed before the install ran:
    # the upgrade of an installed package by name, and apt's own counts.
    calls = log.read_text().splitlines()
    assert [c.split()[1:3] for c in calls] == [["update", "-qq"], ["install", "-s"], ["install", "-y"]]
    assert calls[-1].endswith("chromium chromium-driver")
    out = done.stdout.splitlines()
    upgrade = out.index("make:   upgrade perl-base 5.36.0-7 -> 5.36.0-7+deb12u2")
    counts = out.index("make:   1 upgraded, 1 newly installed, 0 to remove and 3 not upgraded.")
    installed = out.index("Setting up chromium-common")  # apt's own output is shown, not hidden
    assert upgrade < counts < installed
    assert not any("chromium-common" in line for line in out[:installed])  # new packages: counted, not listed
    assert sorted(p.name for p in repo.iterdir()) == [".git", "Makefile"]  # nothing left in the checkout
    log.unlink()
    skipped = subprocess.run(["make", "-s", "chromium", "NO_APT=1"], cwd=repo, env=env, capture_output=True,
                             text=True, timeout=60, check=False)
    assert skipped.returncode == 0 and "NO_APT" in skipped.stdout
    assert not log.exists()  # the system was left alone


def _dry_run(repo: Path, target: str) -> list[str]:
    """The commands `make -n TARGET` would run on a checkout with no .venv yet."""
    done = subprocess.run(["make", "-n", target, "NO_APT=1"], cwd=repo, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _installs(lines: list[str]) -> list[list[str]]:
    """The package sets of each `pip install -e` line, in order."""
    specs = [m for line in lines for m in re.findall(r"pip install .*-e \S*\.\[([^\]]*)\]", line)]
    return [spec.split(",") for spec in specs]


def test_make_demo_installs_what_running_needs_and_make_test_adds_the_dev_extra(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, "Makefile", "pyproject.toml")
    # The demo: TensorFlow (CPU) and tfretrace only, none of pytest, ruff, mypy, selenium, notebooks.
    assert _installs(_dry_run(repo, "demo")) == [["tensorflow-cpu"]]
    # The tests, from a fresh checkout: the same venv, then the dev extra on top.
    assert _installs(_dry_run(repo, "test")) == [["tensorflow-cpu"], ["tensorflow-cpu", "dev"]]
    # After the demo's install (its stamp newer than pyproject.toml), `make test` adds only the dev extra.
    (repo / ".venv").mkdir()
    (repo / ".venv/.installed").touch()
    assert _installs(_dry_run(repo, "test")) == [["tensorflow-cpu", "dev"]]
    assert _installs(_dry_run(repo, "demo")) == []
