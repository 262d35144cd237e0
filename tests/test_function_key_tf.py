"""Function keys recorded by the monitor on real TensorFlow: a moved function keeps its key."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

tf = pytest.importorskip("tensorflow")

import tfretrace  # noqa: E402
from schema_helpers import schema_errors  # noqa: E402
from tfretrace.records.function_key import EXACT, FunctionKey, function_key  # noqa: E402
from tfretrace.records.matching import match, record_key  # noqa: E402
from tfretrace.records.session import Session  # noqa: E402

pytestmark = pytest.mark.tf

PROGRAM = '''\
import tensorflow as tf


@tf.function
def scale(x, factor):
    return x * factor


def make_model():
    import keras
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    return model
'''


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_scale(folder: Path, text: str, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, ModuleType]:
    folder.mkdir()
    (folder / "prog.py").write_text(text, encoding="utf-8")
    monkeypatch.chdir(folder)
    module = load(folder / "prog.py", name)
    with tfretrace.watch(warn=False, log=False) as mon:
        module.scale(tf.ones([2]), 2)
        module.scale(tf.ones([2]), 3)
    return mon.session(), module


def test_a_function_moved_20_lines_down_keeps_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, first = run_scale(tmp_path / "base", PROGRAM, "fk_tf_base", monkeypatch)
    shifted = PROGRAM.replace("import tensorflow as tf\n", "import tensorflow as tf\n" + "# moved down\n" * 20)
    head, second = run_scale(tmp_path / "head", shifted, "fk_tf_head", monkeypatch)
    old, new = base.function("scale"), head.function("scale")
    assert old.location != new.location  # the line really moved
    assert int(new.location.rsplit(":", 1)[1]) - int(old.location.rsplit(":", 1)[1]) == 20
    assert old.key is not None and old.key.code_hash is not None
    assert old.key == new.key == FunctionKey("prog", "scale", old.key.code_hash)
    # The key the monitor recorded is the one the live function has.
    assert old.key == function_key(first.scale, tmp_path / "base")
    assert new.key == function_key(second.scale, tmp_path / "head")
    # Saved and loaded, the sessions pair the function exactly: not new, not vanished.
    saved = [Session.from_dict(json.loads(s.to_json())) for s in (base, head)]
    assert all(schema_errors(json.loads(s.to_json())) == [] for s in (base, head))
    result = match(saved[0].functions, saved[1].functions)
    assert [(record_key(p.base).qualname, p.how) for p in result.pairs] == [("scale", EXACT)]
    assert result.new == result.vanished == ()


def test_keras_functions_are_keyed_by_model_and_role(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    folder = tmp_path / "models"  # not .../keras/...: that is Keras' own code to the monitor
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(folder)
    with tfretrace.watch(warn=False, log=False) as mon:
        module = load(folder / "prog.py", "fk_tf_keras")
        model = module.make_model()
        model.predict(np.ones((4, 3), dtype="float32"), verbose=0)
    rows = [f for f in mon.session().functions if f.keras is not None]
    assert len(rows) == 1
    key = rows[0].key
    assert key is not None
    assert (key.module, key.qualname) == ("prog", "keras:Sequential.predict")
    assert key.code_hash is not None
