"""Safety classes of fix kinds without TensorFlow: the move checks on source text, and the catalogue's table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tfretrace.fix.core import move_checks
from tfretrace.fix.core.safety import SAFE, UNSAFE
from tfretrace.fix.core.source import Replacement, SourceReader, Span
from tfretrace.fix.kinds import KINDS
from tfretrace.fix.planning.safety_plan import classify

DOCS = Path(__file__).resolve().parents[1] / "docs" / "fix-catalogue.md"
PROGRAMS = Path(__file__).resolve().parent / "data" / "fix_safety"


def _def(text: str, name: str) -> tuple[ast.Module, ast.FunctionDef]:
    tree = ast.parse(text)
    found = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
    return tree, found


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("CFG = {'k': 1.0}\ndef f(x):\n    return x * CFG['k']\nCFG['k'] = 2.0\n", "CFG"),
        ("class S:\n    t = 1.0\ndef f(x):\n    return x / S.t\nS.t = 2.0\n", "S.t"),
        ("K = 1.0\ndef f(x):\n    return x * K\nfor K in (1.0, 2.0):\n    pass\n", "K"),
        ("K = 1.0\ndef f(x):\n    global K\n    return x * K\n", "global"),
        ("K = [1.0]\ndef helper():\n    return K[0]\ndef f(x):\n    return x * helper()\n", "helper"),
        ("class S:\n    t = 1.0\ndef f(x):\n    return x / S.t\nsetattr(S, 't', 2.0)\n", "setattr"),
    ],
    ids=["dict-set-per-pass", "class-attribute-annealed", "rebound-by-a-loop", "global", "through-a-helper",
         "setattr"],
)
def test_reads_a_pass_can_change_make_a_move_unsafe(text: str, word: str) -> None:
    tree, function = _def(text, "f")
    reason = move_checks.frozen_reads(tree, function)
    assert reason is not None and word in reason


@pytest.mark.parametrize(
    "text",
    [
        "import tensorflow as tf\nK = 2.0\ndef f(x):\n    return tf.abs(x) * K + len([1])\n",
        "import tensorflow as tf\nW = tf.Variable(1.0)\ndef f(x):\n    return x * W\n",
        "class S:\n    t = 1.0\ndef g(v):\n    return v + 1\ndef f(x):\n    return g(x) / S.t\n",
    ],
    ids=["import-constant-builtin", "variable", "helper-and-class-never-assigned"],
)
def test_reads_nothing_can_change_leave_a_move_safe(text: str) -> None:
    tree, function = _def(text, "f")
    assert move_checks.frozen_reads(tree, function) is None


LOOP = (
    "import tensorflow as tf\n"  # 1
    "\n"  # 2
    "\n"  # 3
    "def double(v):\n"  # 4
    "    return v * 2.0\n"  # 5
    "\n"  # 6
    "\n"  # 7
    "for i in range(3):\n"  # 8
    "    double_tf = tf.function(double)\n"  # 9
    "    print(float(double_tf(tf.constant(1.0))))\n"  # 10
)


def _wrap_edits() -> tuple[Replacement, ...]:
    line = "    double_tf = tf.function(double)\n"
    return (Replacement(Span("p.py", 9, 4, 9, len(line) - 1), ""),
            Replacement(Span("p.py", 8, 0, 8, 0), line.lstrip()))


def test_a_moved_name_the_loop_deletes_is_unsafe(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text(LOOP)
    reader = SourceReader(tmp_path)
    traced = _def(LOOP, "double")[1]
    assert classify("hoist-wrap", _wrap_edits(), reader, traced=traced) == (SAFE, None)
    (tmp_path / "p.py").write_text(LOOP + "    del double_tf\n")
    safety, reason = classify("hoist-wrap", _wrap_edits(), SourceReader(tmp_path), traced=traced)
    assert safety == UNSAFE and reason is not None and "del double_tf" in reason


def test_a_random_draw_makes_any_kind_unsafe(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text(LOOP)
    traced = _def(LOOP, "double")[1]
    safety, reason = classify("hoist-wrap", _wrap_edits(), SourceReader(tmp_path), traced=traced,
                              random="tf.random.normal")
    assert safety == UNSAFE and reason is not None and "tf.random.normal" in reason


def test_kinds_that_change_values_are_never_safe(tmp_path: Path) -> None:
    edit = (Replacement(Span("p.py", 1, 0, 1, 1), "x"),)
    for kind in ("input-signature", "reduce-retracing", "tensor-argument", "cast-dtype", "zero-state",
                 "drop-remainder", "keras-call", "some-new-kind"):
        assert classify(kind, edit, SourceReader(tmp_path))[0] == UNSAFE, kind
    assert classify("input-signature", (), SourceReader(tmp_path)) == ("advice", None)


def test_every_kind_module_is_in_the_registry_once() -> None:
    # One module per edit kind (issue 29 item 6): a module declaring a KIND the registry does not
    # list would have a class and an anchor check that nothing reads.
    import importlib
    import pkgutil

    import tfretrace.fix.kinds as kinds

    declared = []
    for info in pkgutil.iter_modules(kinds.__path__):
        module = importlib.import_module(f"tfretrace.fix.kinds.{info.name}")
        if hasattr(module, "KIND"):
            assert module.KIND.name == module.NAME, info.name
            declared.append(module.KIND)
    assert sorted(k.name for k in declared) == sorted(k.name for k in kinds.REGISTRY)
    assert len(set(KINDS)) == len(kinds.REGISTRY)
    assert set(kinds.CHECKS) == set(KINDS) - {"saved-signature"}  # the one kind that makes no edit of its own


def test_the_catalogue_lists_every_kind_and_every_program_it_must_leave_unchanged() -> None:
    text = DOCS.read_text()
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \|", text, flags=re.M))
    for kind, declared in KINDS.items():
        assert kind in rows, kind
        assert ("unsafe" in rows[kind]) == (declared.never_safe is not None and not declared.probed), kind
        # TensorFlow decides a probed kind's class, and a checked unsafe kind's dtype.
        assert ("TensorFlow" in rows[kind]) == (declared.probed or declared.value_checked), kind
    for program in sorted(PROGRAMS.glob("p*.py")):
        assert f"`{program.name}`" in text, program.name


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("import tensorflow as tf\nmodel = tf.keras.Sequential([])\nmodel.build((None, 2))\n"
         "def f(x):\n    return model(x)\n", True),
        ("CFG = dict(k=1.0)\ndef f(x):\n    return x * CFG['k']\nfor s in (1.0, 2.0):\n    CFG.update(k=s)\n", False),
        ("class C:\n    pass\nCFG = C()\ndef anneal(c):\n    c.k = 2.0\ndef f(x):\n    return x * CFG.k\n"
         "anneal(CFG)\n", False),
    ],
    ids=["model-built-once", "dict-updated", "passed-to-a-helper"],
)
def test_an_object_bound_once_is_safe_only_if_the_file_never_changes_it(text: str, safe: bool) -> None:
    tree, function = _def(text, "f")
    assert (move_checks.frozen_reads(tree, function) is None) == safe


def test_a_saved_signature_is_safe_only_where_tensorflow_traced_it() -> None:
    from tfretrace.fix.planning.step import PlanStep

    edit = {"path": "p.py", "line": 1, "col": 0, "end_line": 1, "end_col": 1, "text": "x"}
    saved = {"cause": "shape-changed", "kind": "input-signature", "summary": "s", "edits": [edit],
             "traces_before": 3, "traces_after": 1, "safety": "safe"}
    assert PlanStep.from_dict(saved).safety == UNSAFE
    checked = PlanStep.from_dict({**saved, "checked": "tensorflow"})
    assert (checked.safety, checked.tier) == (SAFE, 0)
    assert checked.to_dict()["checked"] == "tensorflow"
