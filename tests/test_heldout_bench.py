"""The held-out programs of bench/heldout/: provenance, --seed/--size, no download; bench/heldout.py's inputs."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tfretrace.records.events import KerasInfo
from tfretrace.records.function_report import FunctionReport

BENCH = Path(__file__).resolve().parents[1] / "bench"
PROGRAMS = sorted((BENCH / "heldout").glob("*.py"))


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # bench/heldout.py imports bench/fix_effect.py by name
    spec = importlib.util.spec_from_file_location("heldout", BENCH / "heldout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["heldout"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_there_are_at_least_ten_held_out_programs() -> None:
    assert len(PROGRAMS) >= 10


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_each_program_says_where_it_comes_from_and_under_which_license(program: Path) -> None:
    doc = ast.get_docstring(ast.parse(program.read_text(encoding="utf-8"))) or ""
    assert "Source:" in doc
    assert "License:" in doc
    assert "Reduced:" in doc
    assert "Kept:" in doc


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_each_program_takes_an_int_seed_and_size(program: Path) -> None:
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(program.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
            flag = node.args[0]
            kw = {k.arg: k.value for k in node.keywords}
            default, kind = kw.get("default"), kw.get("type")
            if isinstance(flag, ast.Constant) and isinstance(default, ast.Constant):
                assert isinstance(kind, ast.Name) and kind.id == "int"
                found[str(flag.value)] = int(str(default.value))
    assert set(found) >= {"--seed", "--size"}
    # bench/heldout.py reads the same default to choose the other data's size: three quarters plus
    # one, or one more than the default where that is the default itself (a default of 4 or less).
    other = found["--size"] * 3 // 4 + 1
    assert _bench().other_size(program) == (other if other != found["--size"] else other + 1)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_no_program_downloads_anything(program: Path) -> None:
    tree = ast.parse(program.read_text(encoding="utf-8"))
    body = ast.unparse(ast.Module(body=tree.body[1:], type_ignores=[]))  # without the docstring
    # ".load_data(": a dataset module's download (keras.datasets.mnist.load_data()), not a def of the program.
    for marker in ("get_file(", "http://", "https://", "tfds.load", ".load_data("):
        assert marker not in body


def test_a_program_without_a_size_argument_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "p.py"
    script.write_text('"""No size."""\nprint(1)\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="no `--size` argument"):
        _bench().other_size(script)


def test_an_unknown_program_name_is_refused_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--programs", "no_such_program"]) == 2
    assert "no_such_program" in capsys.readouterr().err


def _predict(model: str, traces: int) -> FunctionReport:
    return FunctionReport(
        name="one_step_on_data_distributed", location="keras/src/backend/tensorflow/trainer.py:279",
        calls=traces, traces=traces, trace_seconds=0.1, objects=1, events=(),
        keras=KerasInfo(model, "Sequential", "predict", "app.py:3"),
    )


def test_each_keras_models_predict_is_counted_from_its_own_function_after_the_edit() -> None:
    # Every model's predict function has one name and one location: the model's name tells them apart
    # (the bench once gave each model the first model's count).
    after = [_predict("sequential", 3), _predict("sequential_2", 2), _predict("sequential_3", 1)]
    report = {"one_step_on_data_distributed": after}
    counterpart = _bench().counterpart
    assert [counterpart(_predict(m, 2), report) for m in ("sequential", "sequential_2", "sequential_3")] == after
    assert counterpart(_predict("sequential_9", 2), report) is None  # that model never predicted


def test_a_plain_function_is_found_by_location_then_as_the_sole_one() -> None:
    def plain(location: str, traces: int) -> FunctionReport:
        return FunctionReport(name="step", location=location, calls=1, traces=traces, trace_seconds=0.1,
                              objects=1, events=())

    counterpart = _bench().counterpart
    moved = plain("a.py:9", 1)
    assert counterpart(plain("a.py:3", 4), {"step": [moved]}) is moved
    two = [plain("a.py:3", 2), plain("b.py:3", 1)]
    assert counterpart(plain("b.py:3", 4), {"step": two}) is two[1]
    assert counterpart(plain("c.py:3", 4), {"step": two}) is None
