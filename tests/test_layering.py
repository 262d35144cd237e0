"""Architecture checks: one module touches TensorFlow, imports flow one way, no TF on import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tfretrace"

# Lower layers never import higher ones: data, then logic, then the monitor, then adapters.
LAYERS = [
    {"errors", "events", "_cause", "catalogue", "_lint_catalogue", "session"},
    {"analyzer", "fixes", "render", "lint", "_tf_adapter", "messages"},
    {"_records", "monitor", "budget", "_pytest_support"},
    {"cli", "pytest_plugin", "keras", "__main__", "__init__"},
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if node.module == "tfretrace":
                found.update(f"tfretrace.{alias.name}" for alias in node.names)
    return found


def _layer(name: str) -> int:
    for number, layer in enumerate(LAYERS):
        if name in layer:
            return number
    raise AssertionError(f"module {name} is in no layer: add it to LAYERS")


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_flow_downwards(path: Path) -> None:
    here = _layer(_module_name(path))
    for target in _imports(path):
        if not target.startswith("tfretrace."):
            continue
        other = target.split(".")[1]
        if other == "__version__":
            continue
        assert _layer(other) <= here, f"{path.name} (layer {here}) imports {target} (layer {_layer(other)})"


def test_only_the_adapter_touches_tensorflow_internals() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        for target in _imports(path):
            root = target.split(".")[0]
            if root == "tensorflow" and path.name != "_tf_adapter.py":
                offenders.append((path.name, target))
            if root == "keras" and path.name not in ("_tf_adapter.py", "keras.py"):
                offenders.append((path.name, target))
            if target.startswith("keras.src") and path.name != "_tf_adapter.py":
                offenders.append((path.name, target))
    assert offenders == []


def test_package_lint_and_plugin_import_without_tensorflow() -> None:
    # Make any attempt to import TensorFlow or Keras fail loudly, as on a machine without them.
    code = (
        "import sys\n"
        "sys.modules['tensorflow'] = None\n"
        "sys.modules['keras'] = None\n"
        "import tfretrace, tfretrace.lint, tfretrace.pytest_plugin, tfretrace.cli, tfretrace.catalogue\n"
        "from tfretrace.cli import main\n"
        "assert main(['explain', 'shape-changed']) == 0\n"
        "try:\n"
        "    tfretrace.install()\n"
        "except tfretrace.TensorFlowMissingError as exc:\n"
        "    print('missing:', str(exc).splitlines()[0])\n"
        "else:\n"
        "    raise SystemExit('install() should need TensorFlow')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "missing: tfretrace's runtime monitor needs TensorFlow" in result.stdout


def test_unsupported_tensorflow_version_fails_clearly() -> None:
    code = (
        "import sys, types\n"
        "fake = types.ModuleType('tensorflow'); fake.__version__ = '2.12.0'\n"
        "sys.modules['tensorflow'] = fake\n"
        "import tfretrace\n"
        "try:\n"
        "    from tfretrace import _tf_adapter\n"
        "    _tf_adapter.load_tensorflow()\n"
        "except tfretrace.UnsupportedVersionError as exc:\n"
        "    print(type(exc).__name__, str(exc))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("UnsupportedVersionError")
    assert "2.12.0" in result.stdout
