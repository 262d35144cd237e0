"""Architecture checks: one package touches TensorFlow, imports flow one way, no TF on import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tfretrace"

# Lower layers never import higher ones: data, then logic, then the monitor, then adapters.
LAYERS = [
    {"_util", "records"},
    {"explain", "fix", "render", "lint", "_tf", "compare"},
    {"runtime", "budget", "integrations"},
    {"cli", "keras", "pytest_plugin", "__main__", "__init__"},
]

# Inside the TensorFlow adapter package, bottom up: a module imports only modules listed before it
# (which also rules out import cycles between them).
ADAPTER = SRC / "_tf"
ADAPTER_ORDER = [
    "__init__", "logfilter", "versions", "frames", "counters", "types", "keras", "data_source", "origins", "reading",
    "earlier", "loglevel", "xla", "relay", "hooks", "warmup",
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC)
    if path.name == "__main__.py":  # a program's entry point (python -m): nothing imports it
        return "__main__"
    return rel.parts[0].removesuffix(".py")


# IPython display hooks on the data records (Session, FunctionReport) are presentation entry
# points: they may import a renderer inside their body, lazily, and nothing else may.
DISPLAY_HOOKS = {"_repr_html_", "_repr_pretty_"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hooks = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in DISPLAY_HOOKS
             for n in ast.walk(f)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in hooks:
            continue
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
        in_adapter = path.parent == ADAPTER
        for target in _imports(path):
            root = target.split(".")[0]
            if root == "tensorflow" and not in_adapter:
                offenders.append((str(path.relative_to(SRC)), target))
            # The public callback (tfretrace/keras.py) subclasses keras' public Callback; nothing
            # else outside the adapter imports Keras, and nothing outside it reads keras.src.
            if root == "keras" and not in_adapter and path != SRC / "keras.py":
                offenders.append((str(path.relative_to(SRC)), target))
            if target.startswith("keras.src") and not in_adapter:
                offenders.append((str(path.relative_to(SRC)), target))
    assert offenders == []


def test_the_adapter_package_imports_bottom_up() -> None:
    assert sorted(p.stem for p in ADAPTER.glob("*.py")) == sorted(ADAPTER_ORDER), "add new modules to ADAPTER_ORDER"
    for path in ADAPTER.glob("*.py"):
        here = ADAPTER_ORDER.index(path.stem)
        for target in _imports(path):
            if target.startswith("tfretrace._tf."):
                other = target.split(".")[2]
                assert ADAPTER_ORDER.index(other) < here, f"_tf/{path.name} imports {target}"


def test_package_lint_and_plugin_import_without_tensorflow() -> None:
    # Make any attempt to import TensorFlow or Keras fail loudly, as on a machine without them.
    code = (
        "import sys\n"
        "sys.modules['tensorflow'] = None\n"
        "sys.modules['keras'] = None\n"
        "import tfretrace, tfretrace.lint, tfretrace.pytest_plugin, tfretrace.cli, tfretrace.records.catalogue\n"
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
        "    from tfretrace._tf import versions\n"
        "    versions.load_tensorflow()\n"
        "except tfretrace.UnsupportedVersionError as exc:\n"
        "    print(type(exc).__name__, str(exc))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("UnsupportedVersionError")
    assert "2.12.0" in result.stdout
