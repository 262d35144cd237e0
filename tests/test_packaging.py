"""The sdist and the wheel built from it: license, docs, examples, test helpers and package data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import tfretrace

# Matrix rows leave it out (tools/matrix.py): the sdist and wheel, not TensorFlow.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # python -m build makes the sdist, then the wheel from the unpacked sdist: a file missing
    # from the sdist breaks the wheel too.
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def test_sdist_has_license_docs_examples_and_test_helpers(dist: Path) -> None:
    (sdist,) = dist.glob("tfretrace-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        license_text = archive.extractfile(f"{archive.getnames()[0].split('/')[0]}/LICENSE")
        assert license_text is not None
        text = license_text.read().decode()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    for expected in ("LICENSE", "README.md", "Makefile", "docs/reports.md", "docs/budgets.md",
                     "examples/demo_train.py", "examples/README.md", "tests/sessions.py",
                     "tests/cli_fakes.py", "tests/conftest.py", "tests/schema_helpers.py",
                     "src/tfretrace/session.schema.json", "src/tfretrace/render/templates/report.js"):
        assert expected in names, expected
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)


def test_wheel_has_package_data_and_runs(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("tfretrace-*.whl")
    assert wheel.name.startswith(f"tfretrace-{tfretrace.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"tfretrace/session.schema.json", "tfretrace/py.typed", "tfretrace/render/templates/report.html.j2"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    # Installed on its own (no checkout on the path), the wheel finds its schema and renders.
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, timeout=300)
    check = (
        "import json, tfretrace; from importlib import resources;"
        "print(json.dumps([tfretrace.__file__, json.loads((resources.files('tfretrace') / 'session.schema.json')"
        ".read_text())['title'], tfretrace.__version__]))"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=120,
                         check=True)
    where, title, version = json.loads(out.stdout)
    assert where.startswith(str(site)) and title.startswith("tfretrace session") and version == tfretrace.__version__
