"""Function keys: stable across line shifts and moves, read from records, and pairing two runs."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from schema_helpers import schema_errors
from tfretrace._util.checked import FieldError
from tfretrace.records.events import KerasInfo
from tfretrace.records.function_key import (
    EDITED,
    EXACT,
    MOVED,
    FunctionKey,
    function_key,
    keras_key,
    module_of_path,
    source_hash,
)
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.matching import match, record_key
from tfretrace.records.session import Session

PROGRAM = '''\
import functools


def helper(x):
    return x + 1


def step(x, lr):
    """One step."""
    y = x * lr
    return helper(y)


class Trainer:
    def train(self, x):
        return step(x, 0.1)
'''


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("path", "root", "module"),
    [
        ("/proj/src/app/train.py", "/proj", "src.app.train"),
        ("/proj/app/__init__.py", "/proj", "app"),
        ("app/train.py", None, "app.train"),
        ("./train.py", None, "train"),
        ("/elsewhere/tool.py", "/proj", "tool"),
        ("/venv/lib/python3.11/site-packages/keras/src/trainer.py", "/proj", "keras.src.trainer"),
        ("<stdin>", "/proj", "<stdin>"),
    ],
)
def test_module_of_path(path: str, root: str | None, module: str) -> None:
    assert module_of_path(path, root) == module


def test_source_hash_ignores_indentation_blank_lines_and_trailing_spaces() -> None:
    flat = "def f(x):\n    return x + 1\n"
    nested = "    def f(x):  \n\n        return x + 1\r\n"
    assert source_hash(flat) == source_hash(nested)
    assert source_hash(flat) != source_hash("def f(x):\n    return x + 2\n")
    assert len(source_hash(flat)) == 16


def test_key_survives_line_shifts_and_edits_elsewhere_in_the_file(tmp_path: Path) -> None:
    first = load(write(tmp_path / "a" / "prog.py", PROGRAM), "fk_prog_a")
    shifted_text = "# a comment\n" * 20 + PROGRAM.replace("return x + 1", "return x + 2")
    shifted = load(write(tmp_path / "b" / "prog.py", shifted_text), "fk_prog_b")
    key = function_key(first.step, tmp_path / "a")
    assert key == FunctionKey("prog", "step", key.code_hash) and key.code_hash is not None
    assert function_key(shifted.step, tmp_path / "b") == key
    # The edited helper keeps its place and name but not its code hash.
    edited = function_key(shifted.helper, tmp_path / "b")
    assert edited.code_hash != function_key(first.helper, tmp_path / "a").code_hash
    # A method: its qualified name; a bound method and a functools.wraps wrapper lead to it.
    method = function_key(first.Trainer.train, tmp_path / "a")
    assert method.qualname == "Trainer.train"
    assert function_key(first.Trainer().train, tmp_path / "a") == method

    @functools.wraps(first.step)
    def wrapper(*args: Any) -> Any:
        return first.step(*args)

    assert function_key(wrapper, tmp_path / "a") == key
    assert function_key(functools.partial(first.step, lr=2), tmp_path / "a") == key


def test_moved_file_keeps_the_code_hash_and_changes_the_module(tmp_path: Path) -> None:
    before = load(write(tmp_path / "prog.py", PROGRAM), "fk_moved_before")
    after = load(write(tmp_path / "pkg" / "training.py", PROGRAM), "fk_moved_after")
    old, new = function_key(before.step, tmp_path), function_key(after.step, tmp_path)
    assert (old.module, new.module) == ("prog", "pkg.training")
    assert (old.qualname, old.code_hash) == (new.qualname, new.code_hash)


def test_function_without_source_has_no_code_hash() -> None:
    namespace: dict[str, Any] = {}
    exec("def made(x):\n    return x\n", namespace)
    key = function_key(namespace["made"], "/proj")
    assert (key.module, key.qualname, key.code_hash) == ("<string>", "made", None)


def test_key_json_round_trip_and_bad_input() -> None:
    key = FunctionKey("app.train", "step", "0123456789abcdef")
    assert FunctionKey.from_dict(json.loads(json.dumps(key.to_dict()))) == key
    assert FunctionKey.from_dict({"module": "m", "qualname": "f"}) == FunctionKey("m", "f", None)
    with pytest.raises(FieldError, match=r"key\.qualname"):
        FunctionKey.from_dict({"module": "m", "qualname": 3})
    with pytest.raises(FieldError, match="key"):
        FunctionKey.from_dict(["m", "f"])


def test_keras_key_ignores_build_line_and_layer_numbering() -> None:
    one = keras_key("app/model.py:10", "Sequential", "train", ["dense", "dense_1"])
    two = keras_key("app/model.py:30", "Sequential", "train", ["dense_4", "dense_5"])
    assert one == two
    assert (one.module, one.qualname) == ("app.model", "keras:Sequential.train")
    assert keras_key("app/model.py:10", "Sequential", "train", ["encoder", "dense"]) != one
    assert keras_key("app/model.py:10", "Sequential", "predict", ["dense", "dense_1"]) != one
    assert keras_key("app/model.py:10", "Sequential", "train").code_hash is None


def _report(name: str, location: str, key: FunctionKey | None = None, keras: KerasInfo | None = None) -> FunctionReport:
    return FunctionReport(name, location, calls=1, traces=1, trace_seconds=0.1, objects=1, events=(),
                          keras=keras, key=key)


def test_record_key_reads_the_recorded_key_or_falls_back_to_name_and_location() -> None:
    key = FunctionKey("app.train", "step", "abc")
    assert record_key(_report("step", "app/train.py:12", key)) == key
    assert record_key(_report("Trainer.step", "app/train.py:12")) == FunctionKey("app.train", "Trainer.step", None)
    keras = KerasInfo("sequential", "Sequential", "fit", built_at="app/model.py:40")
    assert record_key(_report("one_step_on_iterator", "keras/src/trainer.py:1", keras=keras)) == FunctionKey(
        "app.model", "keras:Sequential.train", None
    )


def test_sessions_save_and_load_the_key_within_the_schema() -> None:
    key = FunctionKey("app.train", "step", "0123456789abcdef")
    session = Session(functions=(_report("step", "app/train.py:12", key), _report("f", "x.py:1")), wall_seconds=1.0)
    document = json.loads(session.to_json())
    assert schema_errors(document) == []
    assert document["functions"][0]["key"] == key.to_dict()
    assert document["functions"][1]["key"] is None
    loaded = Session.from_dict(document)
    assert [f.key for f in loaded.functions] == [key, None]
    # An older session without the field loads, and its records key by name and location.
    for function in document["functions"]:
        del function["key"]
    assert schema_errors(document) == []
    assert record_key(Session.from_dict(document).functions[0]) == FunctionKey("app.train", "step", None)


def test_match_pairs_exact_then_moved_then_edited() -> None:
    same = FunctionKey("app", "kept", "h1")
    moved_from, moved_to = FunctionKey("app", "step", "h2"), FunctionKey("pkg.train", "step", "h2")
    edited_from, edited_to = FunctionKey("app", "loss", "h3"), FunctionKey("app", "loss", "h4")
    gone, born = FunctionKey("app", "old", "h5"), FunctionKey("app", "fresh", "h6")
    result = match([same, moved_from, edited_from, gone], [born, edited_to, moved_to, same])
    assert [(p.base, p.head, p.how) for p in result.pairs] == [
        (edited_from, edited_to, EDITED),
        (moved_from, moved_to, MOVED),
        (same, same, EXACT),
    ]
    assert result.new == (born,)
    assert result.vanished == (gone,)


def test_match_prefers_the_stronger_pairing_and_pairs_duplicates_in_order() -> None:
    # The head's function matches one base function exactly and another by module and name only:
    # the exact one wins, and the other is left vanished.
    exact, other = FunctionKey("app", "f", "h1"), FunctionKey("app", "f", "h9")
    result = match([other, exact], [exact])
    assert [(p.base, p.how) for p in result.pairs] == [(exact, EXACT)]
    assert result.vanished == (other,)
    # One function in two workers: both pair, first with first.
    a, b = _report("f", "x.py:1"), _report("f", "x.py:1")
    c, d = _report("f", "x.py:1"), _report("f", "x.py:1")
    paired = match([a, b], [c, d])
    assert [(p.base is a, p.head is c) for p in paired.pairs[:1]] == [(True, True)]
    assert paired.pairs[1].base is b and paired.pairs[1].head is d
    assert paired.new == paired.vanished == ()


def test_match_uses_a_key_function_for_other_items() -> None:
    base = [("x", FunctionKey("m", "f", "1"))]
    head = [("y", FunctionKey("n", "f", "1"))]
    result = match(base, head, key=lambda item: item[1])
    assert [(p.base[0], p.head[0], p.how) for p in result.pairs] == [("x", "y", MOVED)]


def test_records_without_code_hash_match_by_place_and_name() -> None:
    old = _report("step", "app/train.py:12")
    new = _report("step", "app/train.py:32", FunctionKey("app.train", "step", "abc"))
    result = match([old], [new])
    assert [(p.base, p.head, p.how) for p in result.pairs] == [(old, new, EDITED)]
