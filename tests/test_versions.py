"""Versions: an untested TensorFlow warns once and runs; hooks install all or nothing; the session
records the TensorFlow and the Keras really in use.

The scenarios that damage TensorFlow or Keras internals run in ONE subprocess (TensorFlow is
imported once), each restoring what it broke; this file doubles as that runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# The runner (executed in the subprocess)


def _traced(tf: Any, mon: Any) -> dict[str, Any]:
    @tf.function
    def double(x: Any) -> Any:
        return x * 2

    outputs = [double(tf.constant(v)).numpy().tolist() for v in (1.0, 2.0, [3.0])]
    session = mon.session()
    report = next((f for f in session.functions if f.name.endswith("double")), None)
    return {
        "outputs": outputs,
        "tf_count": double.experimental_get_tracing_count(),
        "traces": report.traces if report else 0,
        "notes": list(session.notes),
        "tensorflow": session.tensorflow,
        "keras": session.keras,
        "keras_package": session.keras_package,
    }


def _scenario_newer_version(tf: Any) -> dict[str, Any]:
    import warnings

    import tfretrace

    real = tf.__version__
    tf.__version__ = "2.99.0-dev20990101"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with tfretrace.watch(warn=False, log=False) as mon:
                first = _traced(tf, mon)
            with tfretrace.watch(warn=False, log=False) as mon:
                _traced(tf, mon)
    finally:
        tf.__version__ = real
    first["warnings"] = [
        str(w.message) for w in caught if issubclass(w.category, tfretrace.UntestedVersionWarning)
    ]
    return first


def _scenario_tracing_internals_moved(tf: Any) -> dict[str, Any]:
    import types
    import warnings

    import tensorflow.python.eager.polymorphic_function as package
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
    from tensorflow.python.eager.polymorphic_function import tracing_compilation as tc

    import tfretrace

    call, create = pf.Function.__call__, tc._create_concrete_function
    # As if a new TensorFlow had moved Function: the trace hook's target is still there, the call
    # counter's is not. TensorFlow's own modules keep their references to the real module.
    package.polymorphic_function = types.ModuleType(pf.__name__)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with tfretrace.watch(warn=False, log=False) as mon:
                result = _traced(tf, mon)
                result["untouched"] = pf.Function.__call__ is call and tc._create_concrete_function is create
    finally:
        package.polymorphic_function = pf
    result["warnings"] = [str(w.message) for w in caught if issubclass(w.category, tfretrace.UntestedVersionWarning)]
    # Once the internals are back, a new monitor hooks normally.
    with tfretrace.watch(warn=False, log=False) as mon:
        result["after_repair"] = _traced(tf, mon)
    result["restored"] = pf.Function.__call__ is call and tc._create_concrete_function is create
    return result


def _scenario_keras_internals_moved(tf: Any) -> dict[str, Any]:
    import keras
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
    from tensorflow.python.eager.polymorphic_function import tracing_compilation as tc

    import tfretrace
    from tfretrace._tf import keras as flavors

    flavor = flavors.flavor_of("keras")
    assert flavor is not None
    module = sys.modules[flavor.base_module]
    hidden = {name: getattr(module, name) for name in flavor.base_classes if hasattr(module, name)}
    for name in hidden:
        delattr(module, name)  # as if the next Keras had renamed its model base class
    call, create = pf.Function.__call__, tc._create_concrete_function
    init = next(iter(hidden.values())).__init__
    try:
        with tfretrace.watch(warn=False, log=False) as mon:
            result = _traced(tf, mon)
            result["tf_hooked"] = pf.Function.__call__ is not call
            result["init_untouched"] = next(iter(hidden.values())).__init__ is init
        with tfretrace.watch(warn=False, log=False) as mon:
            # Not wrapped twice: the call hook's original is TensorFlow's own __call__.
            result["wrapped_once"] = getattr(pf.Function.__call__, "__wrapped__", None) is call
    finally:
        for name, value in hidden.items():
            setattr(module, name, value)
    result["restored"] = pf.Function.__call__ is call and tc._create_concrete_function is create
    result["keras_version"] = keras.__version__
    return result


def _main(out: str) -> None:
    import tensorflow as tf

    scenarios = {
        "newer_version": _scenario_newer_version,
        "tracing_internals_moved": _scenario_tracing_internals_moved,
        "keras_internals_moved": _scenario_keras_internals_moved,
    }
    results = {}
    for name, scenario in scenarios.items():
        try:
            results[name] = scenario(tf)
        except Exception as exc:  # reported, and the test for that scenario fails
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    Path(out).write_text(json.dumps(results, indent=1))


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("tensorflow")
    pytest.importorskip("keras")
    out = tmp_path_factory.mktemp("versions") / "results.json"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT / "src"))
    env.pop("TF_USE_LEGACY_KERAS", None)  # these scenarios damage the keras package
    proc = subprocess.run(
        [sys.executable, __file__, str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    data: dict[str, Any] = json.loads(out.read_text())
    for name, record in data.items():
        assert "error" not in record, f"{name}: {record['error']}"
    return data


@pytest.mark.tf
def test_newer_tensorflow_runs_with_one_warning_and_a_note(results: dict[str, Any]) -> None:
    record = results["newer_version"]
    assert len(record["warnings"]) == 1  # two monitors, one warning per process
    assert "2.99.0-dev20990101" in record["warnings"][0]
    assert record["traces"] == record["tf_count"] == 2
    assert any("2.99.0-dev20990101" in note and "newer" in note for note in record["notes"])


@pytest.mark.tf
def test_missing_tracing_internals_patch_nothing_and_the_program_runs_on(results: dict[str, Any]) -> None:
    record = results["tracing_internals_moved"]
    assert record["outputs"] == [2.0, 4.0, [6.0]]
    assert record["untouched"]  # all or nothing: the trace hook was not installed alone
    assert record["traces"] == 0 and record["tf_count"] == 2
    assert len(record["warnings"]) == 1
    assert any("traces not observed" in note for note in record["notes"])
    assert record["after_repair"]["traces"] == record["after_repair"]["tf_count"] == 2
    assert not any("not observed" in note for note in record["after_repair"]["notes"])
    assert record["restored"]


@pytest.mark.tf
def test_moved_keras_internals_keep_the_tensorflow_hooks_and_are_noted(results: dict[str, Any]) -> None:
    record = results["keras_internals_moved"]
    assert record["tf_hooked"] and record["init_untouched"]
    assert record["traces"] == record["tf_count"] == 2
    assert any("model build sites and load_model not observed" in note for note in record["notes"])
    assert record["wrapped_once"]
    assert record["restored"]


@pytest.mark.tf
def test_the_session_records_the_tensorflow_and_keras_in_use(results: dict[str, Any]) -> None:
    import tensorflow as tf

    record = results["keras_internals_moved"]
    assert record["tensorflow"] == tf.__version__
    assert (record["keras_package"], record["keras"]) == ("keras", record["keras_version"])


def test_version_parsing_and_untested_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace._tf import versions

    assert versions.parse_version("2.23.0-dev20261026") == (2, 23)
    assert versions.parse_version("3.16.0.dev2026102704") == (3, 16)
    assert versions.parse_version("nightly") is None
    monkeypatch.setattr(versions, "keras_in_use", lambda: ("keras", "3.17.0.dev2027"))
    notes = versions.untested_notes("2.24.0-dev20270101")
    assert [n.split()[:2] for n in notes] == [["TensorFlow", "2.24.0-dev20270101"], ["Keras", "3.17.0.dev2027"]]
    # The matrix's nightly row is tested.
    monkeypatch.setattr(versions, "keras_in_use", lambda: ("keras", "3.16.0.dev2026102704"))
    assert versions.untested_notes("2.23.0-dev20261026") == []
    monkeypatch.setattr(versions, "keras_in_use", lambda: ("keras", "2.15.0"))
    assert versions.untested_notes("2.15.1") == []
    monkeypatch.setattr(versions, "keras_in_use", lambda: ("tf_keras", "2.21.0"))
    assert versions.untested_notes("2.21.0") == []
    monkeypatch.setattr(versions, "keras_in_use", lambda: ("keras", "3.3.3"))
    assert ["older" in n for n in versions.untested_notes("2.16.2")] == [True]


def test_tf_keras_is_the_keras_in_use_only_when_tensorflow_would_pick_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfretrace._tf import versions

    installed = {"keras": "3.15.1", "tf_keras": "2.21.0"}
    monkeypatch.setattr(versions, "_version_of", installed.get)
    for value, expected in (("1", "tf_keras"), ("True", "tf_keras"), ("0", "keras"), (None, "keras")):
        if value is None:
            monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
        else:
            monkeypatch.setenv("TF_USE_LEGACY_KERAS", value)
        assert versions.keras_package() == expected, value
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    installed.pop("tf_keras")  # TensorFlow then fails to import tf.keras; the package is what there is
    assert versions.keras_in_use() == ("keras", "3.15.1")


if __name__ == "__main__":
    _main(sys.argv[1])
