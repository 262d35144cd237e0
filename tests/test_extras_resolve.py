"""Every documented extra resolves with pip on the oldest and newest Python the README names."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the suite runs on 3.11 here; tomli is a dependency on 3.10
    import tomli as tomllib

# Matrix rows leave it out (tools/matrix.py): pip's resolution on pyenv's Pythons, not this environment.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _interpreter(version: str) -> str | None:
    """A Python of this minor version: pyenv's, then one on PATH (CI's machine has pyenv's)."""
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found = sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    if found:
        return found[-1]
    return shutil.which(f"python{version}")


def _requirements(extras: tuple[str, ...]) -> list[str]:
    extra = PYPROJECT["project"]["optional-dependencies"]
    return [*PYPROJECT["project"]["dependencies"], *(r for name in extras for r in extra[name])]


# Every extra at once (one resolution per Python keeps this test under a minute): the README's
# `.[tensorflow]`, make's `.[tensorflow-cpu,dev]` and `[tensorboard]`; a conflict in any shows here.
EXTRAS = ("tensorflow", "tensorflow-cpu", "dev", "tensorboard")


@pytest.mark.parametrize("version", ["3.10", "3.13"])
def test_every_extra_resolves_on_the_oldest_and_newest_python(version: str, tmp_path: Path) -> None:
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter on this machine (pyenv or PATH)")
    assert PYPROJECT["project"]["requires-python"] == ">=3.10"  # the versions tested are the ones named
    report = tmp_path / "report.json"
    done = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
         *_requirements(EXTRAS)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    chosen = {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"]
              for item in json.loads(report.read_text())["install"]}
    assert chosen["tensorflow"].startswith("2.21.") and chosen["tensorflow-cpu"].startswith("2.21.")
    # Keras 3 in the range tfretrace is tested with, on every Python (3.12 is the newest for 3.10).
    keras = tuple(int(p) for p in chosen["keras"].split(".")[:2])
    assert keras == ((3, 12) if version == "3.10" else (3, 15))
