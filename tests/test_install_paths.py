"""The documented install paths that need no tag: a commit, the branch main, a local clone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Matrix rows leave it out (tools/matrix.py): pip and git, not TensorFlow.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this repository with no tags, as users get it, and a branch main at HEAD."""
    path = tmp_path_factory.mktemp("clone") / "tfretrace"
    subprocess.run(["git", "clone", "-q", "--no-tags", str(ROOT), str(path)], check=True, timeout=120)
    # The checkout may be on main already (CI clones main): detach first, so main can be moved.
    _git(path, "checkout", "-q", "--detach")
    _git(path, "branch", "-f", "main", "HEAD")
    assert _git(path, "tag") == ""  # tags are not published with the branch
    return path


def _pip_install(spec: str, target: Path) -> subprocess.CompletedProcess[str]:
    # No dependencies (TensorFlow is not the point). The git URL is local; only the build backend
    # (setuptools, which this environment may have too old for the SPDX license field) comes from
    # the package index, as for `python -m build` in test_packaging.py.
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), spec],
        capture_output=True, text=True, timeout=600, check=False,
    )


def _installed_version(target: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    code = "import tfretrace; print(tfretrace.__file__, tfretrace.__version__)"
    done = subprocess.run([sys.executable, "-c", code],
                          capture_output=True, text=True, env=env, cwd=target, check=True)
    where, version = done.stdout.split()
    assert Path(where).is_relative_to(target)
    return version


@pytest.mark.parametrize("ref", ["commit", "main"])
def test_pip_installs_from_a_git_url_at_a_commit_or_main(clone: Path, tmp_path: Path, ref: str) -> None:
    at = _git(clone, "rev-parse", "HEAD") if ref == "commit" else "main"
    # README: pip install 'tfretrace[tensorflow] @ git+<URL>@<commit>' (extras need the network).
    done = _pip_install(f"tfretrace @ git+file://{clone}@{at}", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    import tfretrace

    assert _installed_version(tmp_path / "site") == tfretrace.__version__


def test_the_pre_commit_hook_exists_at_a_commit_and_its_entry_is_installed(clone: Path, tmp_path: Path) -> None:
    import yaml

    rev = _git(clone, "rev-parse", "HEAD")  # docs/lint.md: rev: <a commit>
    hooks = yaml.safe_load(_git(clone, "show", f"{rev}:.pre-commit-hooks.yaml"))
    (hook,) = [h for h in hooks if h["id"] == "tfretrace-lint"]
    assert hook["language"] == "python"
    # pre-commit installs the repository at rev into its own environment, then runs the entry.
    done = _pip_install(f"{clone}", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    entry = hook["entry"].split()
    script = tmp_path / "site" / "bin" / entry[0]
    assert script.is_file()
    sample = tmp_path / "ok.py"
    sample.write_text("x = 1\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    run = subprocess.run([sys.executable, str(script), *entry[1:], str(sample)], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_docs_name_no_tag_that_does_not_exist() -> None:
    tags = set(_git(ROOT, "tag").split())
    for doc in (ROOT / "README.md", ROOT / "docs" / "lint.md"):
        text = doc.read_text(encoding="utf-8")
        for word in ("@v0.1.0", "rev: v0.1.0"):
            assert word not in text or word.split("v", 1)[1] in tags, f"{doc.name} installs at a missing tag: {word}"
