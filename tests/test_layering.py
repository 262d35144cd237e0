"""Architecture checks: one package touches TensorFlow, imports flow one way, no TF on import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tfretrace"

# The packages by layer, bottom up: a module imports only its own package and those below it.
# The top layer holds the package's public face (__init__), the public-path modules and every
# ``__main__`` (a program's entry point: ``python -m``; nothing imports it).
LAYERS: list[set[str]] = [
    {"_util"},  # foundations: atomic writes, text, checked JSON readers, tracebacks, settings, version
    {"records"},  # trace and XLA events, function reports, sessions, keys, the cause catalogue, errors
    {"_tf"},  # the only package touching TensorFlow/Keras internals
    {"explain"},  # why a trace happened: the analyzer and its one-line messages
    {"fix"},  # fix plans and source edits
    {"lint"},  # the static linter
    {"runtime"},  # the monitor and its private parts, earlier traces, XLA watch, prevention
    {"budget"},  # block, decorator, XLA and strict budgets
    {"compare"},  # runs compared, baselines
    {"render"},  # text, JSON, HTML and notebook reports
    {"integrations"},  # IPython, TensorBoard, the pytest plugin's parts
    {"cli"},  # the command line
    {"__init__", "__main__", "keras", "pytest_plugin"},  # public face and public-path modules
]
TOP = len(LAYERS) - 1

# Inside the TensorFlow adapter package, bottom up: a module imports only modules listed before it
# (which also rules out import cycles between them).
ADAPTER = SRC / "_tf"
ADAPTER_ORDER = [
    "__init__", "logfilter", "versions", "frames", "counters", "types", "import_watch", "keras_rows", "keras_live",
    "keras",
    "data_source", "origins", "reading", "earlier", "cache_hits", "loglevel", "xla_log", "xla", "relay", "draws",
    "hooks",
    "warmup", "graph_compare", "native_log", "recorded", "run_compare", "keras_call_check", "edited", "programs",
    "live_functions", "fresh", "built_inside", "probe", "relaxed", "tuple_probe", "zero_probe",
]

# Inside the fix package, by role, bottom up: a sub-package imports only itself and those before
# it. core is what every kind and the planner share, kinds holds one module per edit kind and the
# registry, planning assembles plans from the kinds, applying turns a session into file changes.
# The package's own __init__ and errors sit below them all and import none of them.
FIX = SRC / "fix"
FIX_ORDER = ["core", "kinds", "planning", "applying"]


def _dotted(path: Path) -> str:
    """``tfretrace.records.events`` for src/tfretrace/records/events.py; a package is its __init__."""
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_dotted(p): p for p in SRC.rglob("*.py")}


def _owner(module: str) -> int:
    """The layer of a tfretrace module: its package's, or the top for the public face and entry points."""
    parts = module.split(".")
    if len(parts) == 1 or parts[-1] == "__main__":
        return TOP
    for number, layer in enumerate(LAYERS):
        if parts[1] in layer:
            return number
    raise AssertionError(f"{module}: package or module {parts[1]} is in no layer: add it to LAYERS")


def _resolve(target: str) -> str | None:
    """The tfretrace module an import names (``a.b.Name`` -> ``a.b``), or None outside tfretrace."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _imports(path: Path) -> set[str]:
    """Every tfretrace module ``path`` imports: top-level, lazy, type-only, relative and importlib by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _dotted(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            named.update(f"{base}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant)):
            named.add(str(node.args[0].value))
    found = set()
    for target in named:
        if target.split(".")[0] == "tfretrace":
            module = _resolve(target)
            if module is not None and module != here:
                found.add(module)
    return found


def _external(path: Path) -> set[str]:
    """The modules outside tfretrace that ``path`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_every_package_and_top_module_has_a_layer() -> None:
    for module in MODULES:
        _owner(module)
    # The top holds only the public face and the modules users import by their path.
    top = {m for m in MODULES if m.count(".") == 1 and not (SRC / m.split(".")[1]).is_dir()}
    assert top == {"tfretrace.__main__", "tfretrace.keras", "tfretrace.pytest_plugin"}


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_flow_downwards(path: Path) -> None:
    here = _owner(_dotted(path))
    for target in _imports(path):
        assert _owner(target) <= here, f"{_dotted(path)} (layer {here}) imports {target} (layer {_owner(target)})"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_anywhere() -> None:
    # Every import counts: at the top, inside functions (display hooks included), under
    # TYPE_CHECKING and importlib.import_module by name.
    graph = {module: _imports(path) for module, path in MODULES.items()}
    assert _cycles(graph) == []


def test_every_package_says_in_one_line_what_it_owns() -> None:
    for init in sorted(SRC.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{init.relative_to(SRC)} has no docstring"
        first = doc.splitlines()[0]
        assert first.endswith(".") and len(first) <= 120, f"{init.relative_to(SRC)}: {first!r}"


def test_only_the_adapter_touches_tensorflow_internals() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        in_adapter = path.parent == ADAPTER
        for target in _external(path):
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


def _fix_rank(module: str) -> int:
    """The place of a fix module's sub-package in FIX_ORDER; -1 for the package's own __init__ and errors."""
    parts = module.split(".")
    if len(parts) == 2 or parts[2] == "errors":
        return -1
    assert parts[2] in FIX_ORDER, f"{module}: fix sub-package {parts[2]} is in no role: add it to FIX_ORDER"
    return FIX_ORDER.index(parts[2])


def test_every_fix_module_has_a_role() -> None:
    loose = {p.name for p in FIX.glob("*.py")}
    assert loose == {"__init__.py", "errors.py"}, "put fix modules in a sub-package of FIX_ORDER"
    assert sorted(p.name for p in FIX.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(FIX_ORDER)


@pytest.mark.parametrize("path", sorted(FIX.rglob("*.py")), ids=lambda p: str(p.relative_to(FIX)))
def test_fix_sub_packages_import_in_role_order(path: Path) -> None:
    # Every import counts, lazy and type-only ones included: core -> kinds -> planning -> applying.
    here = _fix_rank(_dotted(path))
    for target in _imports(path):
        if target.startswith("tfretrace.fix."):
            assert _fix_rank(target) <= here, f"{_dotted(path)} imports {target}: against {FIX_ORDER}"


KINDS_PACKAGE = "tfretrace.fix.kinds"
# Modules outside fix/kinds that still import a kind's module by name, each for what the registry
# does not yet carry (the origin step's edit of an eager vectorized_map, made outside the planner's
# makers): the list only shrinks. A new import of a kind's
# module from outside the package fails below: read the registry (fix.kinds) instead.
KIND_IMPORTS_LEFT = {
    "tfretrace.fix.planning.origin_advice": {"wrap_vectorized_map"},
}


def _kind_modules_imported(path: Path) -> set[str]:
    """The kind modules (fix.kinds.<kind>) ``path`` imports, by any form, lazy ones included."""
    return {t.rpartition(".")[2] for t in _imports(path) if t.startswith(KINDS_PACKAGE + ".")}


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_kind_modules_are_imported_only_through_the_registry(path: Path) -> None:
    # One kind, one module (issue 38 item 6): every fact of a kind is on its Kind record, which the
    # registry (fix.kinds) lists; a module elsewhere that imports a kind by name holds a fact of it.
    module = _dotted(path)
    if module == KINDS_PACKAGE or module.startswith(KINDS_PACKAGE + "."):
        return
    assert _kind_modules_imported(path) <= KIND_IMPORTS_LEFT.get(module, set()), module


def test_kind_import_check_sees_a_kind_module_imported_by_name() -> None:
    # ``from tfretrace.fix.kinds.wrap_vectorized_map import ...`` names a module, not a table of the registry.
    origin = KIND_IMPORTS_LEFT["tfretrace.fix.planning.origin_advice"]
    assert _kind_modules_imported(FIX / "planning" / "origin_advice.py") == origin
    assert _kind_modules_imported(FIX / "planning" / "restored.py") == set()  # its kinds' flags, from the registry
    assert _kind_modules_imported(FIX / "planning" / "plan.py") == set()  # the registry's tables only


def test_fix_role_order_check_sees_a_violation() -> None:
    assert _fix_rank("tfretrace.fix.kinds.neutral_key") > _fix_rank("tfretrace.fix.core.source")
    assert _fix_rank("tfretrace.fix.core.source") < _fix_rank("tfretrace.fix.applying.apply")
    assert _fix_rank("tfretrace.fix.errors") < _fix_rank("tfretrace.fix.core")


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


def test_public_errors_are_named_by_the_path_users_import_them_from() -> None:
    # Tracebacks print module.qualname: it must be the public path, not the private layout's.
    code = (
        "import importlib, pickle, tfretrace\n"
        "from tfretrace.budget import BudgetExceededError\n"
        "classes = [tfretrace.RetracingWarning, tfretrace.RetraceError, tfretrace.UnsupportedVersionError,\n"
        "           tfretrace.UntestedVersionWarning, tfretrace.TensorFlowMissingError, BudgetExceededError]\n"
        "for cls in classes:\n"
        "    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls, cls\n"
        "    print(cls.__module__ + '.' + cls.__qualname__)\n"
        "assert type(pickle.loads(pickle.dumps(tfretrace.RetraceError('x')))) is tfretrace.RetraceError\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "tfretrace.RetracingWarning", "tfretrace.RetraceError", "tfretrace.UnsupportedVersionError",
        "tfretrace.UntestedVersionWarning", "tfretrace.TensorFlowMissingError", "tfretrace.budget.BudgetExceededError",
    ]
