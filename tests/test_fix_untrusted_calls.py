"""A session's edit texts call nothing but TensorFlow's spec and tensor constructors; `fix` shows what it writes."""

from __future__ import annotations

import ast
import difflib
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_fix_untrusted import one_line_error, recorded, step
from tfretrace.cli import main
from tfretrace.fix.applying.anchors import AnchorError, anchors_for, check_edit
from tfretrace.fix.core.source import Replacement, SourceReader, Span
from tfretrace.fix.planning.plan import PlanStep
from tfretrace.records.function_report import FunctionReport

# A stand-in `tensorflow` module: the edited program runs here without TensorFlow, and a call of
# the program's own `publish()` leaves a file behind.
FAKE_TF = (
    "def function(f=None, **kw):\n"
    "    return f if f is not None else (lambda g: g)\n"
    "\n"
    "\n"
    "class TensorSpec:\n"
    "    def __init__(self, *a, **kw):\n"
    "        pass\n"
    "\n"
    "\n"
    "float32 = 'float32'\n"
)
PROGRAM = (
    "import tensorflow as tf\n"
    "\n"
    "\n"
    "def publish():\n"
    "    open('published', 'w').write('ran')\n"
    "\n"
    "\n"
    "@tf.function\n"
    "def train_step(x):\n"
    "    return x\n"
    "\n"
    "\n"
    "out = train_step(2.0)\n"
)
DECORATOR = Span("train.py", 8, 1, 8, 12)
SPEC = "tf.TensorSpec(shape=[], dtype=tf.float32)"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _run_program(folder: Path) -> None:
    done = subprocess.run([sys.executable, "train.py"], cwd=folder, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("entry", ["publish()", "publish(x=" + SPEC + ")", "exit()", "breakpoint()",
                                   "main()", "tf.TensorSpec(shape=publish(), dtype=tf.float32)",
                                   "tf.TensorSpec(shape=[], dtype=tf.float32, name=publish())",
                                   "tf.TensorSpec(shape=[], dtype=tf.float32.__class__)",
                                   "(publish := tf)", "[publish][0]", "(lambda: 1)"])
def test_a_signature_entry_that_calls_the_programs_own_code_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str
) -> None:
    text = f"tf.function(input_signature=[{entry}, {SPEC}])"
    saved = recorded(tmp_path, [step("input-signature", (Replacement(DECORATOR, text),))],
                     {"train.py": PROGRAM, "tensorflow.py": FAKE_TF}, location="train.py:8")
    assert main(["fix", str(saved), "--apply", "--unsafe-fixes"]) == 2
    one_line_error(capsys.readouterr().err)
    assert (tmp_path / "train.py").read_text() == PROGRAM
    _run_program(tmp_path)
    assert not (tmp_path / "published").exists()


def test_a_signature_of_literal_specs_is_still_written_and_runs(tmp_path: Path) -> None:
    text = f"tf.function(input_signature=[{SPEC}])"
    saved = recorded(tmp_path, [step("input-signature", (Replacement(DECORATOR, text),))],
                     {"train.py": PROGRAM, "tensorflow.py": FAKE_TF}, location="train.py:8")
    assert main(["fix", str(saved), "--apply", "--unsafe-fixes"]) == 0
    assert f"@{text}\n" in (tmp_path / "train.py").read_text()
    _run_program(tmp_path)


@pytest.mark.parametrize(("kind", "program", "span", "text", "fine"), [
    # A file without `import tensorflow`: `tf` there is the program's own object.
    ("zero-state", "tf = object()\nstate = None\n", Span("train.py", 2, 8, 2, 12), "tf.zeros([1], dtype=tf.float32)",
     "import tensorflow as tf\nstate = None\n"),
    ("cast-dtype", "import tensorflow as tf\ntrain_step(x)\n", Span("train.py", 2, 11, 2, 12),
     "tf.cast(x, tf.float32.mro())", "tf.cast(x, tf.float32)"),
])
def test_other_kinds_call_nothing_but_tensorflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    kind: str, program: str, span: Span, text: str, fine: str,
) -> None:
    saved = recorded(tmp_path, [step(kind, (Replacement(span, text),))], {"train.py": program},
                     location="train.py:1")
    assert main(["fix", str(saved), "--apply", "--unsafe-fixes"]) == 2
    one_line_error(capsys.readouterr().err)
    assert (tmp_path / "train.py").read_text() == program
    # The same place with what tfretrace writes there is applied: the refusal is the text's.
    ok = tmp_path / "ok"
    ok.mkdir()
    monkeypatch.chdir(ok)
    good_program, good_text = (fine, text) if fine.startswith("import") else (program, fine)
    saved = recorded(ok, [step(kind, (Replacement(span, good_text),))], {"train.py": good_program},
                     location="train.py:1")
    assert main(["fix", str(saved), "--apply", "--unsafe-fixes"]) == 0
    assert good_text in (ok / "train.py").read_text()


# -- for any edit text, an accepted one calls only TensorFlow's constructors -----------------

CHECKED = "import tensorflow as tf\n\n\n@tf.function\ndef step(x):\n    return x\n\n\nstep(1)\n"
ALLOWED_CALLS = {("tf", "TensorSpec"), ("tf", "RaggedTensorSpec"), ("tf", "SparseTensorSpec")}

_names = st.sampled_from(["tf", "publish", "main", "exit", "os", "ds", "x", "__import__", "breakpoint"])
_attrs = st.sampled_from(["float32", "int64", "TensorSpec", "RaggedTensorSpec", "system", "element_spec",
                          "dtypes", "__class__", "mro", "function"])
_dotted = st.builds(lambda n, a: f"{n}.{a}", _names, _attrs)
# Arbitrary expressions: names, attributes, calls, lambdas, walrus, subscripts, starred...
_hostile = st.one_of(
    _names, _dotted, st.builds(lambda f: f"{f}()", st.one_of(_names, _dotted)),
    st.sampled_from(["(lambda: 1)", "(x := 1)", "ds[0]", "tf.float32.__class__", "tf.float32.mro()", "[publish()]",
                     "{'a': main()}", "ds.element_spec.x", "publish().element_spec", "tf.float32 if x else 1",
                     "f'{publish()}'", "-x", "not x", "tf.TensorSpec", "tf.zeros", "tf.dtypes.cast(1)"]),
)
# What TensorFlow's spec constructors take from tfretrace: literal shapes, constants and dtypes.
_literal = st.sampled_from(["None", "1", "-3", "'s'", "True", "[None, 3]", "()", "[]", "(2, None)", "tf.float32",
                            "tf.dtypes.int64", "tf.string"])
_value = st.one_of(_literal, _literal, _literal, _hostile)
_ctor = st.one_of(st.sampled_from(["tf.TensorSpec", "tf.RaggedTensorSpec", "tf.SparseTensorSpec"]),
                  st.sampled_from(["tf.TensorSpec", "tf.RaggedTensorSpec"]), _names, _dotted)
_keyword = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["shape", "dtype", "name", "ragged_rank"]), _value),
    _value.map(lambda v: f"*{v}"), _value.map(lambda v: f"**{v}"),
)
_spec = st.builds(lambda f, a, k: f"{f}({', '.join([*a, *k])})", _ctor, st.lists(_value, max_size=2),
                  st.lists(_keyword, max_size=2))
_leaf = st.one_of(_spec, _spec, _spec, _hostile, st.sampled_from(["ds.element_spec", "a.b.element_spec"]))


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        items.map(lambda a: f"[{', '.join(a)}]"),
        items.map(lambda a: f"({', '.join(a)},)"),
        st.builds(lambda k, v: f"{{{k}: {v}}}", st.sampled_from(["'a'", "1", "x"]), inner),
        inner.map(lambda v: f"{{**{v}}}"),
        # a call of a name with structures of specs for fields: a namedtuple, or the program's own function
        st.builds(lambda f, v: f"{f}(x={v})", st.one_of(_names, _dotted), inner),
        st.builds(lambda f, v: f"{f}({v})", st.one_of(_names, _dotted), inner),
        inner.map(lambda v: f"(lambda: {v})"),
        inner.map(lambda v: f"(x := {v})"),
        st.builds(lambda a, b: f"{a}[{b}]", inner, inner),
        st.builds(lambda a, b: f"({a} if {b} else {a})", inner, inner),
        inner.map(lambda v: f"({v}).element_spec"),
    )


_entries = st.recursive(_leaf, _grow, max_leaves=6)


def _accepted(tmp: Path, kind: str, span: Span, text: str) -> bool:
    report = FunctionReport("step", "prog.py:4", calls=1, traces=2, trace_seconds=0.1, objects=1,
                            events=())
    anchors = anchors_for(report, SourceReader(tmp))
    try:
        check_edit(kind, anchors, Replacement(span, text))
    except AnchorError:
        return False
    return True


def _calls_only_tensorflow(text: str, outer: tuple[str, ...]) -> bool:
    tree = ast.parse(text.strip(), mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Subscript, ast.Starred, ast.Await, ast.Yield)):
            return False
        if isinstance(node, ast.Call):
            parts: list[str] = []
            func: ast.expr = node.func
            while isinstance(func, ast.Attribute):
                parts.insert(0, func.attr)
                func = func.value
            if not isinstance(func, ast.Name):
                return False
            called = (func.id, *parts)
            if called not in ALLOWED_CALLS and not (called == outer and node is tree.body):
                return False
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return False
    return True


@pytest.fixture(scope="module")
def checked_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("anchors")
    (folder / "prog.py").write_text(CHECKED)
    (folder / "state.py").write_text("import tensorflow as tf\nh = None\nstep(h)\n")
    return folder


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(entries=st.lists(_entries, min_size=1, max_size=3), other=_entries)
def test_no_accepted_edit_text_calls_anything_but_tensorflow(
    checked_file: Path, entries: list[str], other: str
) -> None:
    decorator = Span("prog.py", 4, 1, 4, 12)
    texts = [
        ("input-signature", decorator, f"tf.function(input_signature=[{', '.join(entries)}])"),
        ("element-spec", decorator, f"tf.function(input_signature=({entries[0]},))"),
        ("reduce-retracing", decorator, f"tf.function(reduce_retracing={other})"),
        ("zero-state", Span("state.py", 2, 4, 2, 8), f"tf.zeros({entries[0]}, dtype={other})"),
    ]
    for kind, span, text in texts:
        try:
            ast.parse(text, mode="eval")
        except SyntaxError:
            continue
        if _accepted(checked_file, kind, span, text):
            outer = ("tf", "zeros") if kind == "zero-state" else ("tf", "function")
            assert _calls_only_tensorflow(text, outer), (kind, text)


def test_the_generator_reaches_accepted_and_refused_texts(checked_file: Path) -> None:
    """The property above is not vacuous: literal specs pass, a bare call does not."""
    decorator = Span("prog.py", 4, 1, 4, 12)
    good = f"tf.function(input_signature=[{SPEC}, ds.element_spec])"
    assert _accepted(checked_file, "input-signature", decorator, good)
    bad = f"tf.function(input_signature=[publish(), {SPEC}])"
    assert not _accepted(checked_file, "input-signature", decorator, bad)


# -- what fix prints is what it writes -------------------------------------------------------


def test_the_printed_plan_and_diff_are_what_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = f"tf.function(input_signature=[{SPEC}])"
    claimed = "tf.function(reduce_retracing=True)  # harmless"
    plan = PlanStep("shape-changed", "input-signature", "a step", claimed, (Replacement(DECORATOR, written),),
                    120, 1, 1.5).to_dict()
    saved = recorded(tmp_path, [plan], {"train.py": PROGRAM, "tensorflow.py": FAKE_TF}, location="train.py:8")
    assert main(["fix", str(saved), "--unsafe-fixes"]) == 0
    shown = capsys.readouterr().out
    assert claimed not in shown  # the session's own code is never shown for an edit tfretrace makes
    assert main(["fix", str(saved), "--apply", "--unsafe-fixes"]) == 0
    after = (tmp_path / "train.py").read_text()
    diff = "".join(difflib.unified_diff(PROGRAM.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile="a/train.py", tofile="b/train.py"))
    assert diff and diff in shown
    plan_part = shown.split("\n--- a/train.py", 1)[0]
    assert written in plan_part  # the plan shows the text written, as written
