"""tools/matrix.py's bookkeeping on hand-built records: which examples equal the reference run,
which differ as a Keras generation is known to, when a row is green (no TensorFlow needed), and
that the reference run writes its record on a fresh checkout (TensorFlow needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

# Matrix rows leave it out (tools/matrix.py): tools/matrix.py itself.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("matrix_tool", ROOT / "tools" / "matrix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["matrix_tool"] = module
    spec.loader.exec_module(module)
    return module


def _record(*functions: tuple[str, str | None, list[str], int]) -> dict[str, Any]:
    return {
        "error": None,
        "internal_errors": 0,
        "functions": [
            {"name": name, "keras_method": method, "traces": traces, "events": [{"cause": c} for c in found]}
            for name, method, found, traces in functions
        ],
    }


def test_keras_functions_compare_by_role_and_the_rest_by_name() -> None:
    matrix = _tool()
    keras3 = _record(
        ("TensorFlowTrainer.make_predict_function.<locals>.one_step_on_data_distributed", "predict",
         ["first-trace", "shape-changed"], 2),
        ("train_step", None, ["first-trace"], 1),
    )
    keras2 = _record(
        ("Model.make_predict_function.<locals>.predict_function", "predict_on_batch",
         ["first-trace", "shape-changed"], 2),
        ("train_step", None, ["first-trace"], 1),
    )
    assert matrix.summary(keras3) == matrix.summary(keras2)
    renamed = _record(("other_step", None, ["first-trace"], 1))
    assert matrix.summary(renamed) != matrix.summary(_record(("train_step", None, ["first-trace"], 1)))
    fewer = _record(("train_step", None, ["first-trace"], 2))
    assert matrix.summary(fewer) != matrix.summary(_record(("train_step", None, ["first-trace"], 1)))


def test_rows_are_green_only_with_no_failure_and_no_unexplained_difference() -> None:
    matrix = _tool()
    row = next(r for r in matrix.ROWS if r.name == "tf2.15-keras2")
    same = _record(("f", None, ["first-trace"], 1))
    reference = {
        "a.py": same,
        "keras_predict_loop.py": _record(("p", "predict", ["first-trace", "shape-changed"], 2)),
    }
    keras2_loop = _record(("q", "predict", ["first-trace"], 1))

    result = matrix.Result(row, versions="TF 2.15.1 / keras 2.15.0", passed=3)
    result.examples = {"a.py": same, "keras_predict_loop.py": keras2_loop}
    matrix.compare(result, reference)
    assert result.equal == ["a.py"]
    assert list(result.explained) == ["keras_predict_loop.py"]
    assert result.green

    keras3 = matrix.Result(row, versions="TF 2.18.1 / keras 3.6.0", passed=3)
    keras3.examples = {"a.py": same, "keras_predict_loop.py": keras2_loop}
    matrix.compare(keras3, reference)
    assert keras3.differing == ["keras_predict_loop.py"]  # not a known difference for Keras 3
    assert not keras3.green

    failing = matrix.Result(row, versions="TF 2.15.1 / keras 2.15.0", passed=2, failed=1)
    failing.examples = {"a.py": same, "keras_predict_loop.py": keras2_loop}
    matrix.compare(failing, reference)
    assert not failing.green
    text = matrix.table([result, keras3, failing], total=2)
    assert text.count("green") == 1 and text.count("FAIL") == 2


def test_reference_examples_run_on_a_checkout_without_matrix_dir(tmp_path: Path, monkeypatch: Any) -> None:
    # CI starts from a fresh clone: the reference row (the main environment) is the first to write
    # under .matrix/, which must then be made rather than assumed.
    matrix = _tool()
    root = tmp_path / "checkout"
    (root / "examples").mkdir(parents=True)
    (root / "examples" / "context_changed.py").write_text((ROOT / "examples" / "context_changed.py").read_text())
    (root / "tests").symlink_to(ROOT / "tests")
    monkeypatch.setattr(matrix, "ROOT", root)
    monkeypatch.setattr(matrix, "MATRIX", root / ".matrix")
    row = next(r for r in matrix.ROWS if r.name == matrix.REFERENCE)
    result = matrix.Result(row)
    matrix.run_examples(Path(sys.executable), result)
    assert result.problem is None
    assert result.examples is not None and list(result.examples) == ["context_changed.py"]
    assert result.examples["context_changed.py"]["functions"]


@pytest.mark.tf
def test_a_row_writes_its_session_for_compare(tmp_path: Path) -> None:
    # --sessions: each row runs the program under tfretrace and saves its session; two rows'
    # sessions then compare like two commits (here the reference row twice: nothing changed).
    matrix = _tool()
    program = tmp_path / "prog" / "train.py"
    program.parent.mkdir()
    program.write_text("import tensorflow as tf\n\n@tf.function\ndef f(x):\n    return x\n\n"
                       "f(tf.ones([1]))\nf(tf.ones([2]))\n", encoding="utf-8")
    row = next(r for r in matrix.ROWS if r.name == matrix.REFERENCE)
    result = matrix.Result(row)
    path = matrix.write_session(Path(sys.executable), result, program, tmp_path / "sessions")
    assert result.problem is None and path == tmp_path / "sessions" / f"{matrix.REFERENCE}.json"
    from tfretrace.compare.baseline import load_run
    from tfretrace.compare.comparison import compare

    run = load_run(path)
    assert run.tensorflow is not None
    assert [(c.key.module, c.key.qualname, c.traces, c.retraces) for c in run.functions] == [("train", "f", 2, 1)]
    assert compare(run, load_run(path)).worse == ()
    broken = matrix.Result(row)
    assert matrix.write_session(Path(sys.executable), broken, tmp_path / "nothere.py", tmp_path / "s2") is None
    assert broken.problem is not None and broken.problem.startswith("no session written")


def test_tests_option_refuses_a_missing_file_or_an_unknown_row(capsys: Any) -> None:
    matrix = _tool()
    assert matrix.main(["--rows", "tf2.15-keras2", "--tests", "tf2.15-keras2=tests/no_such_test.py"]) == 2
    assert "no_such_test.py" in capsys.readouterr().err
    assert matrix.main(["--rows", "tf2.15-keras2", "--tests", "tf9.99=tests/test_matrix_tool.py"]) == 2
    assert matrix.main(["--rows", "tf2.15-keras2", "--tests", "tf2.15-keras2"]) == 2


def test_a_row_runs_only_its_selected_files_and_only_the_tensorflow_tests_not_single_environment(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # CI gives the tf-keras row a list of files; every row runs the tests marked tf (tfretrace's own
    # Python alone runs once, in make test) and leaves out those marked single_env.
    matrix = _tool()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    tf: x\n    single_env: x\n    browser: x\n")
    (tmp_path / "tests" / "test_a.py").write_text(
        "import pytest\n\n@pytest.mark.tf\ndef test_runs():\n    pass\n\n"
        "@pytest.mark.tf\n@pytest.mark.single_env\ndef test_once():\n    raise AssertionError\n\n"
        "def test_python_alone():\n    raise AssertionError\n"
    )
    (tmp_path / "tests" / "test_b.py").write_text(
        "import pytest\n\n@pytest.mark.tf\ndef test_not_selected():\n    raise AssertionError\n"
    )
    monkeypatch.setattr(matrix, "ROOT", tmp_path)
    monkeypatch.setattr(matrix, "MATRIX", tmp_path / ".matrix")
    row = next(r for r in matrix.ROWS if r.name == matrix.REFERENCE)
    selected = matrix.Result(row)
    matrix.run_tests(Path(sys.executable), selected, ["tests/test_a.py"])
    assert (selected.problem, selected.passed, selected.failed) == (None, 1, 0)
    whole = matrix.Result(row)
    matrix.run_tests(Path(sys.executable), whole)
    assert (whole.passed, whole.failed, whole.failures) == (1, 1, ["tests.test_b::test_not_selected"])
