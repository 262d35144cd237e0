"""The pytest plugin: marker, fixture, options, automatic reset, and no TensorFlow when unused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tfretrace.integrations.pytest_support import marker_origin

pytest_plugins = ["pytester"]

PREFIX = "budget exceeded:"

# One inner run exercises everything that needs TensorFlow: one subprocess, one TF import.
INNER_TESTS = """
import pytest
import tensorflow as tf
import tfretrace

@tf.function
def step(x):
    return x * 2.0

@tf.function
def other(x):
    return x

@tf.function
def fresh(x):  # traced by test_fixture alone: its record starts with a first trace
    return x

@tf.function
def globally(x):  # traced by test_global_option_fail alone
    return x

@tfretrace.budget(max_traces=1)
@tf.function
def budgeted(x):
    return x

@pytest.fixture
def warm():
    step(tf.zeros([1]))  # traced during setup: not counted by the marker

@pytest.mark.max_traces(1)
def test_marker_pass():
    step(tf.zeros([11]))
    step(tf.zeros([11]))

@pytest.mark.max_traces(1)
def test_marker_fail():
    step(tf.zeros([21]))
    step(tf.zeros([22]))

@pytest.mark.max_traces(0, "step")
def test_named_function_only(warm):
    other(tf.zeros([31]))
    other(tf.zeros([32]))
    step(tf.zeros([1]))  # cached by the fixture's warm-up

@pytest.mark.max_traces(0, step)
def test_function_object_fail():
    step(tf.zeros([41]))

@pytest.mark.max_traces(1)
def test_swallowed_error_still_fails():
    try:
        step(tf.zeros([51]))
        step(tf.zeros([52]))
    except Exception:
        pass

def test_fixture(tfretrace_monitor):
    fresh(tf.zeros([61]))
    fresh(tf.zeros([62]))
    state = tfretrace_monitor.state("fresh")
    assert [e.cause for e in state.events()] == ["first-trace", "shape-changed"]

def test_no_leak_first(tfretrace_monitor):
    step(tf.zeros([71]))

def test_no_leak_second(tfretrace_monitor):
    assert tfretrace_monitor.states() == []

def test_decorator_budget_reset_first():
    budgeted(tf.zeros([81]))

def test_decorator_budget_reset_second():
    budgeted(tf.zeros([82]))  # a second trace in the process, the first in this test

def test_global_option_fail():
    for n in (91, 92, 93):
        globally(tf.zeros([n]))
"""

PASSED = {
    "test_marker_pass",
    "test_named_function_only",
    "test_fixture",
    "test_no_leak_first",
    "test_no_leak_second",
    "test_decorator_budget_reset_first",
    "test_decorator_budget_reset_second",
}
FAILED = {
    "test_marker_fail": "shape-changed",
    # step traced in the tests before: its cache holds those traces, the new shape is compared
    # with them (never first-trace), and a marker counts the test body only.
    "test_function_object_fail": "shape-changed",
    "test_swallowed_error_still_fails": "shape-changed",
    "test_global_option_fail": "shape-changed",
}


@pytest.fixture
def quiet_tf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)


@pytest.mark.tf
def test_marker_fixture_reset_option_and_summary(pytester: pytest.Pytester, quiet_tf: None) -> None:
    pytester.makepyfile(test_inner=INNER_TESTS)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--tfretrace-summary", "--tfretrace-max-traces=2", "-p", "no:randomly", "-p", "no:cacheprovider",
        f"--junitxml={report.with_suffix('.xml')}",
    )
    outcomes = _outcomes(pytester.path / "report.xml")
    assert {name for name, (state, _) in outcomes.items() if state == "passed"} == PASSED, result.stdout.str()
    failed = {name: text for name, (state, text) in outcomes.items() if state == "failed"}
    assert set(failed) == set(FAILED)
    for name, cause in FAILED.items():
        assert PREFIX in failed[name] and f"cause {cause}" in failed[name], name
    assert "--tfretrace-max-traces=2" in failed["test_global_option_fail"]
    assert "tfretrace/budget/" not in result.stdout.str()  # __tracebackhide__ and unlinked frames
    result.stdout.fnmatch_lines(
        [
            "*tfretrace: tf.function traces per test*",
            "test_inner.py::test_marker_fail",
            "  step (test_inner.py:*): traces=1 causes=shape-changed earlier=1 refused=shape-changed",
            "test_inner.py::test_function_object_fail",
            "  step (test_inner.py:*): traces=0 causes= earlier=3 refused=shape-changed",
            "test_inner.py::test_fixture",
            "  fresh (test_inner.py:*): traces=2 causes=first-trace,shape-changed",
        ]
    )


@pytest.mark.tf
def test_xdist_workers_send_their_summary_and_failures_show_no_plumbing(
    pytester: pytest.Pytester, quiet_tf: None
) -> None:
    import xdist  # noqa: F401  (dev extras: missing is a failure, never a skip)
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--tfretrace-summary", "--tfretrace-max-traces=2", "-p", "no:randomly",
        "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=len(PASSED), failed=len(FAILED))
    out = result.stdout.str()
    summary = out.split("tfretrace: tf.function traces per test", 1)[1]
    assert "no test traced a tf.function" not in summary
    for nodeid, line in [
        # Which tests traced step before this one depends on the worker: its earlier count varies.
        ("test_inner.py::test_marker_fail", "step (test_inner.py:*): traces=1 causes=* refused=shape-changed"),
        ("test_inner.py::test_fixture", "fresh (test_inner.py:*): traces=2 causes=first-trace,shape-changed"),
        ("test_inner.py::test_global_option_fail",
         "globally (test_inner.py:*): traces=2 causes=first-trace,shape-changed refused=shape-changed"),
    ]:
        result.stdout.fnmatch_lines([nodeid, f"  {line}"])  # each test's lines right under it
    failures = out.split("= FAILURES =", 1)[1].split("tfretrace: tf.function traces per test")[0]
    assert failures.count("budget exceeded:") == len(FAILED)
    assert "x: shape (21,) -> (22,), dim 0" in failures  # the explanation ...
    # ... and no frame of tfretrace or of TensorFlow's re-raise between the test's line and it.
    assert "tfretrace/" not in failures and "traceback_utils" not in failures, failures


def _outcomes(xml_path: Any) -> dict[str, tuple[str, str]]:
    """name -> (passed|failed, failure text) from a JUnit XML report."""
    import xml.etree.ElementTree as ET

    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        failure = case.find("failure")
        text = "" if failure is None else (failure.get("message") or "") + (failure.text or "")
        out[case.get("name", "")] = ("failed" if failure is not None else "passed", text)
    return out


def test_help_lists_the_options_and_the_marker(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*tfretrace*", "*--tfretrace-summary*", "*--tfretrace-max-traces=N*"])
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.max_traces(n, ?functions)*"])


NO_TF_CONFTEST = """
import json, sys

def pytest_sessionfinish(session):
    with open("modules.json", "w") as f:
        json.dump({
            "plugin": "tfretrace.pytest_plugin" in sys.modules,
            "tensorflow": "tensorflow" in sys.modules,
            "support": "tfretrace.integrations.pytest_support" in sys.modules,
        }, f)
"""


def test_project_without_tensorflow_never_imports_it(pytester: pytest.Pytester, quiet_tf: None) -> None:
    pytester.makeconftest(NO_TF_CONFTEST)
    pytester.makepyfile(test_plain="def test_arithmetic():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("--tfretrace-summary", "--tfretrace-max-traces=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*tfretrace: tf.function traces per test*", "no test traced a tf.function"])
    modules = json.loads((pytester.path / "modules.json").read_text())
    # Loaded through the entry point, yet neither TensorFlow nor the plugin's logic came with it.
    assert modules == {"plugin": True, "tensorflow": False, "support": False}


def test_marker_needs_an_int(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="import pytest\n@pytest.mark.max_traces('one')\ndef test_x():\n    pass\n"
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*max_traces(n, ?functions) with an int n*"])


def test_marker_origin_names_functions() -> None:
    def step() -> None:
        pass

    assert marker_origin(1, ()) == "@pytest.mark.max_traces(1)"
    assert marker_origin(0, ("step", step)) == "@pytest.mark.max_traces(0, 'step', step)"


@pytest.mark.tf
def test_watch_counts_only_while_armed() -> None:
    tf = pytest.importorskip("tensorflow")
    from tfretrace.integrations.pytest_support import TestWatch

    @tf.function
    def armed_step(x: Any) -> Any:
        return x

    watch = TestWatch(0, ["armed_step"]).start()
    try:
        armed_step(tf.zeros([1]))  # disarmed: like a fixture's warm-up
        watch.arm()
        armed_step(tf.zeros([1]))  # cached
        with pytest.raises(AssertionError, match=r"^budget exceeded:"):
            armed_step(tf.zeros([2]))
        watch.disarm()
    finally:
        watch.stop()
    assert watch.unraised() is not None
    assert watch.summary_lines()[0].endswith("traces=1 causes=first-trace refused=shape-changed")


def test_marker_and_fixture_without_tensorflow_fail_with_one_line(pytester: pytest.Pytester) -> None:
    # A None entry in sys.modules makes `import tensorflow` raise ImportError, as if not installed.
    pytester.makeconftest("import sys\nsys.modules['tensorflow'] = None\n")
    pytester.makepyfile(
        test_no_tf="import pytest\n"
        "@pytest.mark.max_traces(1)\ndef test_marker():\n    pass\n"
        "def test_fixture(tfretrace_monitor):\n    pass\n"
        "def test_late(request):\n    request.getfixturevalue('tfretrace_monitor')\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2, failed=1)
    out = result.stdout.str()
    # One line per test in the failure sections; the short summary repeats it after "Failed: ".
    lines = out.splitlines()
    assert sum(line.startswith("tfretrace: tfretrace's runtime monitor needs TensorFlow") for line in lines) == 3
    assert not any(line.startswith("tfretrace's runtime monitor needs TensorFlow") for line in lines)
    assert "During handling" not in out
    assert "Traceback" not in out and "TensorFlowMissingError" not in out


def test_bad_budgets_are_one_line_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="import pytest\n"
        "@pytest.mark.max_traces(-1)\ndef test_negative():\n    pass\n"
        "@pytest.mark.max_traces(1, 42)\ndef test_not_a_function():\n    pass\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "max_traces must be a non-negative int, got -1" in out and "needs a Python function" in out
    assert "Traceback" not in out
    option = pytester.runpytest_subprocess("--tfretrace-max-traces=-1")
    assert option.ret == pytest.ExitCode.USAGE_ERROR
    assert "expected a whole number of traces" in option.stderr.str()


FIXTURE_GATE_TESTS = """
import tensorflow as tf

@tf.function
def gated(x):
    return x

def test_retraces(tfretrace_monitor):
    gated(tf.zeros([1]))
    gated(tf.zeros([2]))

def test_steady(tfretrace_monitor):
    gated(tf.zeros([1]))
    gated(tf.zeros([1]))
"""


@pytest.mark.tf
def test_warnings_as_errors_with_the_fixture_fail_a_test_that_retraces(
    pytester: pytest.Pytester, quiet_tf: None
) -> None:
    # README: `pytest -W error::tfretrace.RetracingWarning` with the fixture is the pytest gate.
    pytester.makepyfile(test_gate=FIXTURE_GATE_TESTS)
    result = pytester.runpytest_subprocess(
        "-W", "error::tfretrace.RetracingWarning", "-p", "no:randomly", "-p", "no:cacheprovider",
        "--junitxml=report.xml",
    )
    outcomes = _outcomes(pytester.path / "report.xml")
    assert outcomes["test_retraces"][0] == "failed", result.stdout.str()
    assert "RetracingWarning" in outcomes["test_retraces"][1] and "shape-changed" in outcomes["test_retraces"][1]
    assert outcomes["test_steady"][0] == "passed", result.stdout.str()
    # The failure shows the test's line and the message, as a budget failure does: no frame of
    # tfretrace, none of TensorFlow's re-raise, and no reprs of tfretrace's records in locals.
    failure = result.stdout.str().split("= FAILURES =", 1)[1]
    assert ">       gated(tf.zeros([2]))" in failure and "x: shape (1,) -> (2,), dim 0" in failure
    from tfretrace._util.tracebacks import PACKAGE_DIR

    for internal in ("FunctionState(", "TraceEvent(", PACKAGE_DIR, "traceback_utils"):
        assert internal not in failure, failure


@pytest.mark.parametrize("content", ["{not json", '{"tfretrace_baseline": 99}'], ids=["not-json", "unknown-version"])
def test_update_with_a_damaged_baseline_is_a_usage_error_before_any_test(
    pytester: pytest.Pytester, content: str
) -> None:
    pytester.makepyfile(test_plain="def test_runs():\n    open('ran', 'w').close()\n")
    (pytester.path / "baseline.json").write_text(content)
    result = pytester.runpytest_subprocess("--tfretrace-baseline", "baseline.json", "--tfretrace-update-baseline",
                                           "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "ran").exists()
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and "baseline.json" in errors[0], result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert (pytester.path / "baseline.json").read_text() == content  # left as it was


KERAS_TESTS = """
import numpy as np
import tensorflow as tf


def test_evaluate_per_size():
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)], name="sequential")
    model.compile(loss="mse")
    for n in (4, 5):
        model.evaluate(np.ones((n, 3), np.float32), np.ones((n, 1), np.float32), batch_size=n, verbose=0)
"""


@pytest.mark.tf
def test_the_summary_names_keras_functions_as_the_run_report_does(pytester: pytest.Pytester, quiet_tf: None) -> None:
    pytester.makepyfile(test_keras_eval=KERAS_TESTS)
    result = pytester.runpytest_subprocess("--tfretrace-summary", "-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    lines = [line.strip() for line in result.stdout.lines if "traces=" in line]
    # The model and its method (FunctionReport.display_name), never Keras' internal qualname.
    assert lines and all(line.startswith("sequential.evaluate (") for line in lines), lines
    assert not any("_make_function" in line or "<locals>" in line for line in lines)
