"""Every script in examples/ runs under the monitor and produces the cause it is about.

All examples run in ONE subprocess (TensorFlow is imported once): this file doubles as the
runner, ``python tests/test_examples.py OUT.json examples/a.py ...``, which runpy-runs each
example inside its own ``tfretrace.watch()`` and writes one JSON record per example.
``context_changed.py`` runs first because it splits the CPU into two logical devices, which
TensorFlow only allows before it has initialised its devices.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from keras_roles import ROLES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

# Run order: context_changed first (logical devices), the rest alphabetically.
FIRST = "context_changed.py"
KERAS_NEW_MODEL = {"keras-new-model", "new-function-object"}
# Causes that need no example of their own: the first trace, the catch-all, and the Keras
# causes, which keras_predict_loop.py and the real-report tests cover.
NO_EXAMPLE_NEEDED = {"first-trace", "unexplained"}


def example_files() -> list[Path]:
    files = sorted(p for p in EXAMPLES.glob("*.py") if p.name != FIRST)
    return [EXAMPLES / FIRST, *files]


# ---------------------------------------------------------------------------------------------
# The runner (executed in the subprocess)


def _record(path: str) -> dict[str, Any]:
    import tfretrace

    stdout = io.StringIO()
    error = None
    namespace: dict[str, Any] = {}
    with tfretrace.watch(warn=False, log=False) as mon, contextlib.redirect_stdout(stdout):
        try:
            namespace = runpy_run(path)
        except Exception as exc:  # reported, and the test for that example fails
            error = f"{type(exc).__name__}: {exc}"
    session = mon.session()
    counts = {}
    for name, value in namespace.items():
        if hasattr(value, "experimental_get_tracing_count"):
            counts[name] = value.experimental_get_tracing_count()
    return {
        "error": error,
        "stdout": stdout.getvalue(),
        "internal_errors": session.internal_errors,
        "tracing_counts": counts,
        "session": session.to_dict(),
        "functions": [
            {
                "name": f.name,
                "traces": f.traces,
                "calls": f.calls,
                "objects": f.objects,
                "retraces": f.retraces,
                "keras_method": f.keras.method if f.keras else None,
                "keras_package": session.keras_package,
                "keras": session.keras,
                "xla_compiles": f.xla_compiles,
                "xla_events": [
                    {"trace": e.trace, "cause": e.cause, "changes": [c.line() for c in e.changes]}
                    for e in f.xla_events
                ],
                "events": [
                    {
                        "cause": e.cause,
                        "changes": [{"path": c.path, "kind": c.kind} for c in e.changes],
                    }
                    for e in f.events
                ],
            }
            for f in session.functions
        ],
    }


def runpy_run_module(path: Path) -> dict[str, Any]:
    """Load an example's definitions without running its __main__ block."""
    import runpy

    return runpy.run_path(str(path), run_name="example")


def runpy_run(path: str) -> dict[str, Any]:
    import runpy

    # Each example parses its command line (--seed, --size): it gets none, as `python example.py`.
    argv = sys.argv
    sys.argv = [path]
    try:
        return runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv


def _main(argv: list[str]) -> None:
    out, paths = argv[0], argv[1:]
    results = {Path(p).name: _record(p) for p in paths}
    Path(out).write_text(json.dumps(results, indent=1))


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("examples") / "results.json"
    # TF_CPP_MIN_LOG_LEVEL above 0 would hide TensorFlow's XLA compile log (xla_recompile.py).
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0", PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [sys.executable, __file__, str(out), *map(str, example_files())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    data: dict[str, Any] = json.loads(out.read_text())
    for name, record in data.items():
        assert record["error"] is None, f"{name}: {record['error']}"
        assert record["internal_errors"] == 0, name
    return data


def fn(results: dict[str, Any], example: str, name: str) -> dict[str, Any]:
    for report in results[example]["functions"]:
        if report["name"] == name:
            return report
    raise KeyError(f"{example}: no function {name!r}")


def keras_fn(results: dict[str, Any], example: str, role: str) -> dict[str, Any]:
    """The report of Keras' function in this role (train, test, predict), whatever Keras names it."""
    found = [r for r in results[example]["functions"] if ROLES.get(r["keras_method"]) == role]
    assert len(found) == 1, [r["name"] for r in found]
    return found[0]


def causes(report: dict[str, Any]) -> list[str]:
    return [e["cause"] for e in report["events"]]


def paths(report: dict[str, Any], index: int) -> list[str]:
    return [c["path"] for c in report["events"][index]["changes"]]


pytestmark = pytest.mark.tf


def test_every_example_has_a_test_and_a_readme_line(results: dict[str, Any]) -> None:
    readme = (EXAMPLES / "README.md").read_text()
    tested = {name.removeprefix("test_") + ".py" for name in globals() if name.startswith("test_")}
    for path in example_files():
        assert path.name in results
        assert f"`{path.name}`" in readme, f"{path.name} missing from examples/README.md"
        assert path.name in tested, f"{path.name} has no test_<name> in this file"


def test_shape_changed(results: dict[str, Any]) -> None:
    report = fn(results, "shape_changed.py", "train_step")
    assert causes(report) == ["first-trace", "shape-changed", "shape-changed"]
    assert paths(report, 1) == ["tokens"] and paths(report, 2) == ["tokens"]
    assert report["calls"] == 5
    assert report["traces"] == results["shape_changed.py"]["tracing_counts"]["train_step"] == 3


def test_xla_recompile(results: dict[str, Any]) -> None:
    report = fn(results, "xla_recompile.py", "score")
    assert report["traces"] == results["xla_recompile.py"]["tracing_counts"]["score"] == 2
    # Lengths 5, 7, 9, 5, 11, 13, 7: trace 1 compiled for 5; trace 2 (time dim None) for 7, 9, 11, 13.
    assert report["xla_compiles"] == 5
    events = report["xla_events"]
    assert [(e["trace"], e["cause"]) for e in events] == [
        (1, "xla-first-compile"), (2, "xla-first-compile"),
        (2, "xla-recompile"), (2, "xla-recompile"), (2, "xla-recompile")]
    assert events[2]["changes"] == ["tokens: shape (4, 7, 8) -> (4, 9, 8), dim 1"]


def test_vectorized_map_eager(results: dict[str, Any]) -> None:
    report = fn(results, "vectorized_map_eager.py", "tf.vectorized_map")
    assert causes(report) == ["first-trace"] + ["pfor-per-call"] * 3
    assert report["calls"] == 4 and report["retraces"] == 3
    # The advice: the same loop inside one tf.function traces once.
    norms = fn(results, "vectorized_map_eager.py", "norms")
    assert norms["traces"] == results["vectorized_map_eager.py"]["tracing_counts"]["norms"] == 1


def test_dataset_per_epoch(results: dict[str, Any]) -> None:
    rebuilt, once = [r for r in results["dataset_per_epoch.py"]["functions"] if r["name"] == "Dataset.map(parse)"]
    assert causes(rebuilt) == ["first-trace", "data-pipeline-rebuilt", "data-pipeline-rebuilt"]
    assert rebuilt["calls"] == 3 and rebuilt["retraces"] == 2
    assert causes(once) == ["first-trace"] and once["retraces"] == 0


def test_saved_model_roundtrip(results: dict[str, Any]) -> None:
    saved = fn(results, "saved_model_roundtrip.py", "Scaler.scale")
    assert causes(saved) == ["first-trace", "shape-changed", "saved-model-export", "saved-model-export"]
    assert saved["retraces"] == 1  # the serialization traces are expected
    restored = fn(results, "saved_model_roundtrip.py", "scale (restored by tf.saved_model.load)")
    assert causes(restored) == ["first-trace", "restored-new-signature", "restored-reloaded", "restored-reloaded"]
    assert restored["calls"] == 5 and restored["retraces"] == 3


def test_dtype_changed(results: dict[str, Any]) -> None:
    report = fn(results, "dtype_changed.py", "normalize")
    assert causes(report) == ["first-trace", "dtype-changed"]
    assert report["events"][1]["changes"] == [{"path": "images", "kind": "dtype"}]
    assert report["traces"] == results["dtype_changed.py"]["tracing_counts"]["normalize"] == 2


def test_python_value_changed(results: dict[str, Any]) -> None:
    report = fn(results, "python_value_changed.py", "train_step")
    assert causes(report) == ["first-trace"] + ["python-value-changed"] * 3
    assert all(paths(report, i) == ["learning_rate"] for i in (1, 2, 3))
    assert report["calls"] == 12
    assert report["traces"] == results["python_value_changed.py"]["tracing_counts"]["train_step"] == 4


def test_structure_changed(results: dict[str, Any]) -> None:
    counts = results["structure_changed.py"]["tracing_counts"]
    for name, path in (("sum_losses", "losses"), ("masked_mean", "features")):
        report = fn(results, "structure_changed.py", name)
        assert causes(report) == ["first-trace", "structure-changed"], name
        assert report["events"][1]["changes"] == [{"path": path, "kind": "structure"}]
        assert report["traces"] == counts[name] == 2


def test_object_identity(results: dict[str, Any]) -> None:
    report = fn(results, "object_identity.py", "augment")
    assert report["traces"] == results["object_identity.py"]["tracing_counts"]["augment"] == 4
    # The second config is built while the first is alive, so its id always differs.
    assert causes(report)[:2] == ["first-trace", "object-identity"]
    assert report["events"][1]["changes"] == [{"path": "config", "kind": "identity"}]
    # Later configs may reuse a dead config's id(): still a new object, never "unexplained".
    assert set(causes(report)[2:]) == {"object-identity"}


def test_object_identity_reused_id() -> None:
    """Trace with one config, drop it, then trace with a new config, preferably one that landed
    at the dead config's address (CPython usually hands the freed block straight back). Either
    way the earlier trace can never match again: object-identity, never unexplained. The exact
    same-address case is also covered without the allocator in tests/test_analyzer.py."""
    import gc

    import tensorflow as tf

    import tfretrace

    namespace = runpy_run_module(EXAMPLES / "object_identity.py")
    augment, config_class = namespace["augment"], namespace["AugmentConfig"]
    images = tf.ones([2, 4])
    with tfretrace.watch(warn=False, log=False) as mon:
        first = config_class(2.0, 0.5)
        augment(images, first)
        dead_id = id(first)
        del first
        gc.collect()
        keep = [config_class(2.0, 0.5) for _ in range(2000)]
        same = next((c for c in keep if id(c) == dead_id), keep[0])
        augment(images, same)
    report = next(f for f in mon.session().functions if f.name == "augment")
    assert [e.cause for e in report.events] == ["first-trace", "object-identity"]
    assert [c.path for c in report.events[1].changes] == ["config"]


def test_new_function_object(results: dict[str, Any]) -> None:
    loss = fn(results, "new_function_object.py", "compute_loss")
    assert causes(loss) == ["first-trace"] + ["new-function-object"] * 3
    assert loss["objects"] == loss["traces"] == 4
    assert all(e["changes"] == [] for e in loss["events"])  # identical signature every time
    inner = fn(results, "new_function_object.py", "make_scaler.<locals>.scale")
    assert causes(inner) == ["first-trace"] + ["new-function-object"] * 2
    assert inner["objects"] == 3


def test_variable_creation(results: dict[str, Any]) -> None:
    report = fn(results, "variable_creation.py", "LazyDense.__call__")
    assert causes(report) == ["first-trace", "variable-creation"]
    assert paths(report, 1) == ["<context>.scope_type"]
    assert report["retraces"] == 0
    assert report["calls"] == 3


def test_variable_spec_changed(results: dict[str, Any]) -> None:
    report = fn(results, "variable_spec_changed.py", "clip_into")
    assert causes(report) == ["first-trace", "variable-spec-changed", "variable-spec-changed"]
    assert paths(report, 1) == ["source"] and paths(report, 2) == ["source"]
    assert report["calls"] == 4
    assert report["traces"] == results["variable_spec_changed.py"]["tracing_counts"]["clip_into"] == 3


def test_context_changed(results: dict[str, Any]) -> None:
    record = results["context_changed.py"]
    # Eager calls under two tf.device scopes: the device is not part of the key, no retrace.
    scale = fn(results, "context_changed.py", "scale")
    assert causes(scale) == ["first-trace"] and scale["calls"] == 2
    assert record["tracing_counts"]["scale"] == 1
    # Under MirroredStrategy the replica function is traced once per device.
    replica = fn(results, "context_changed.py", "replica_loss")
    assert causes(replica) == ["first-trace", "context-changed"]
    assert paths(replica, 1) == ["<context>.device"]
    assert replica["traces"] == record["tracing_counts"]["replica_loss"] == 2
    assert causes(fn(results, "context_changed.py", "distributed_step")) == ["first-trace"]


def test_keras_predict_loop(results: dict[str, Any]) -> None:
    report = keras_fn(results, "keras_predict_loop.py", "predict")
    assert report["keras_method"] == "predict"
    got = causes(report)
    stdout = results["keras_predict_loop.py"]["stdout"]
    if report["keras"].startswith("2."):
        # Keras 2 batches the 10, 20, 7 and 13 rows into datasets whose batch dimension is None
        # from the start: no retrace for the shared model (TensorFlow's own count says 1).
        assert "shared model, predict traces: 1" in stdout
        models = got[1:]
    else:
        # Keras 3: one relaxed retrace for the new batch size, then nothing.
        assert "shared model, predict traces: 2" in stdout
        assert got[:2] == ["first-trace", "shape-changed"]
        assert paths(report, 1) == ["data[0]"]
        models = got[2:]
    # Three models built per request: one trace each.
    assert len(models) == 3 and set(models) <= KERAS_NEW_MODEL
    assert report["objects"] == 4


def test_no_retrace_traps(results: dict[str, Any]) -> None:
    record = results["no_retrace_traps.py"]
    reports = record["functions"]
    assert {r["name"] for r in reports} == {"clip_or_scale", "add_noise", "above_threshold"}
    for report in reports:
        assert causes(report) == ["first-trace"], report["name"]
        assert report["retraces"] == 0
    assert set(record["tracing_counts"].values()) == {1}
    assert "(frozen)" in record["stdout"] and "still uses 0.5" in record["stdout"]


def test_demo_train(results: dict[str, Any]) -> None:
    step = fn(results, "demo_train.py", "train_step")
    assert {"shape-changed", "python-value-changed"} == set(causes(step)[1:])
    assert causes(step).count("python-value-changed") == 2  # lr decays after epochs 1 and 2
    assert step["traces"] == results["demo_train.py"]["tracing_counts"]["train_step"]
    metric = fn(results, "demo_train.py", "evaluate.<locals>.batch_error")
    assert causes(metric).count("new-function-object") == 2 and metric["objects"] == 3
    score = fn(results, "demo_train.py", "score")
    assert causes(score)[1:] and set(causes(score)[1:]) == {"structure-changed"}
    assert paths(score, 1) == ["token_ids"]
    # XLA: one trace with a None batch and width, compiled per validation batch shape.
    predict = fn(results, "demo_train.py", "predict_batch")
    assert predict["traces"] == 1 and predict["xla_compiles"] == 4
    assert [e["cause"] for e in predict["xla_events"]][1:] == ["xla-recompile"] * 3


def test_every_example_session_follows_the_published_schema(results: dict[str, Any]) -> None:
    from schema_helpers import schema_errors

    assert "demo_train.py" in results
    for name, record in results.items():
        assert schema_errors(record["session"]) == [], name
        assert record["session"]["functions"], name


def test_every_runtime_cause_has_an_example(results: dict[str, Any]) -> None:
    from tfretrace.records import catalogue

    wanted = {
        c.slug
        for c in catalogue.entries("runtime")
        if c.slug not in NO_EXAMPLE_NEEDED and not c.slug.startswith("keras-")
    }
    seen = {
        event["cause"]
        for record in results.values()
        for report in record["functions"]
        for event in (*report["events"], *report["xla_events"])
    }
    assert wanted <= seen, f"causes without an example: {sorted(wanted - seen)}"


if __name__ == "__main__":
    _main(sys.argv[1:])
