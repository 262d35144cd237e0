"""pytest plugin wiring for trace budgets and baselines (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

# Wiring only: pytest loads this module into every run once tfretrace is installed, so it
# imports nothing of TensorFlow and nothing of the monitor until a test asks for them.
import os
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tfretrace._tf.cache_hits import CacheHits
    from tfretrace.integrations.pytest_baseline import BaselineGate
    from tfretrace.integrations.pytest_support import TestWatch
    from tfretrace.runtime.monitor import Monitor

_WATCH: pytest.StashKey[TestWatch] = pytest.StashKey()
_PREVENTION: pytest.StashKey[Any] = pytest.StashKey()
_SUMMARY: pytest.StashKey[list[tuple[str, list[str]]]] = pytest.StashKey()
_GATE: pytest.StashKey[BaselineGate] = pytest.StashKey()
_RECORDED: pytest.StashKey[dict[str, Any]] = pytest.StashKey()
_UPDATED: pytest.StashKey[str] = pytest.StashKey()
_HITS: pytest.StashKey[CacheHits] = pytest.StashKey()
_FIXTURE = "tfretrace_monitor"
# The name under which a test's summary lines travel in its teardown report's user_properties:
# pytest-xdist sends reports (not the workers' config) to the controller that prints the summary.
_PROPERTY = "tfretrace_traces"
# The same for a test's counts under --tfretrace-update-baseline, in its call report.
_COUNTS = "tfretrace_counts"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The command-line options (``pytest --help`` lists them under tfretrace)."""
    group = parser.getgroup("tfretrace", "tf.function trace budgets (tfretrace)")
    group.addoption(
        "--tfretrace-summary",
        action="store_true",
        default=False,
        help="print the tf.function traces of every test (and their causes) after the run",
    )
    group.addoption(
        "--tfretrace-xla",
        action="store_true",
        default=False,
        help="record XLA compiles (jit_compile) too: asks TensorFlow, before the tests import it, to "
        "log them (on with --tfretrace-summary / --tfretrace-max-traces; needed for max_xla_compiles)",
    )
    group.addoption(
        "--tfretrace-max-traces",
        type=_max_traces,
        default=None,
        metavar="N",
        help="fail a test whose body traces any tf.function more than N times "
        "(a max_traces marker overrides it)",
    )
    group.addoption(
        "--tfretrace-baseline",
        default=None,
        metavar="FILE",
        help="fail the tests that retrace more than the counts stored for them in FILE, with why "
        "(write FILE with --tfretrace-update-baseline)",
    )
    group.addoption(
        "--tfretrace-update-baseline",
        action="store_true",
        default=False,
        help="record every test's trace counts in the --tfretrace-baseline FILE instead of checking them",
    )
    group.addoption(
        "--tfretrace-prevent",
        default=None,
        metavar="PROFILE.json",
        help="warm each tf.function whose calls varied in shape in PROFILE (a profile file or a saved "
        "session) with one general trace at its first call, for the whole test run; the calls met "
        "outside it widen a profile file (default: $TFRETRACE_PREVENT)",
    )


def _max_traces(text: str) -> int:
    import argparse

    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number of traces (0 or more), got {text!r}")
    return int(text)


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker so that --strict-markers accepts it."""
    config.addinivalue_line(
        "markers",
        "max_traces(n, *functions): fail when the test body traces a tf.function more than n "
        "times (only the named functions or function objects, if given; max_xla_compiles=k also "
        "limits XLA compiles); see tfretrace docs/budgets.md",
    )
    config.stash[_SUMMARY] = []
    _apply_project_settings(config)
    wants_xla = (config.getoption("tfretrace_xla") or config.getoption("tfretrace_summary")
                 or config.getoption("tfretrace_max_traces") is not None)
    if wants_xla:
        # Before collection imports TensorFlow: it reads its log settings once, when it loads.
        from tfretrace.runtime.monitor import prepare_xla

        prepare_xla()
    if config.getoption("tfretrace_summary", False):
        config.pluginmanager.register(_SummaryCollector(config.stash[_SUMMARY]), "tfretrace-summary")
    _configure_baseline(config)
    _start_prevention(config)


def _configure_baseline(config: pytest.Config) -> None:
    path = config.getoption("tfretrace_baseline", None)
    update = config.getoption("tfretrace_update_baseline", False)
    if path is None:
        if update:
            raise pytest.UsageError("--tfretrace-update-baseline needs --tfretrace-baseline FILE")
        return
    from tfretrace.integrations.pytest_baseline import BaselineGate

    try:
        gate = BaselineGate.open(path, update)
    except ValueError as exc:  # no such file, or a damaged one: one line, not a failure per test
        raise pytest.UsageError(str(exc)) from None
    config.stash[_GATE] = gate
    config.stash[_RECORDED] = {}
    if update:
        config.pluginmanager.register(_CountsCollector(config.stash[_RECORDED]), "tfretrace-baseline")


def _start_prevention(config: pytest.Config) -> None:
    """--tfretrace-prevent (or $TFRETRACE_PREVENT): one prevention for the whole test run."""
    from tfretrace.runtime.prevent import profile_from_env

    path = config.getoption("tfretrace_prevent", None) or profile_from_env()
    if path is None:
        return
    from tfretrace.records.session import SessionFormatError
    from tfretrace.runtime.prevent import prevent

    try:
        config.stash[_PREVENTION] = prevent(path)
    except SessionFormatError as exc:
        raise pytest.UsageError(f"--tfretrace-prevent: {exc}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the run's prevention, if any."""
    prevention = config.stash.get(_PREVENTION, None)
    if prevention is not None and prevention.active:
        prevention.stop()


def _apply_project_settings(config: pytest.Config) -> None:
    """``[tool.tfretrace.pytest]`` in the project's pyproject.toml: defaults for the options above."""
    from tfretrace._util.config import ProjectConfigError, load

    path = config.rootpath / "pyproject.toml"
    try:
        settings = load(path if path.is_file() else None).pytest
    except ProjectConfigError as exc:
        raise pytest.UsageError(f"tfretrace: {exc}") from None
    option = config.option
    # A command-line option wins; a setting only fills in what was not given.
    if settings.max_traces is not None and option.tfretrace_max_traces is None:
        option.tfretrace_max_traces = settings.max_traces
    option.tfretrace_summary = option.tfretrace_summary or settings.summary
    option.tfretrace_xla = option.tfretrace_xla or settings.xla


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Give the test a fresh watch when it uses the marker, the fixture or an option."""
    # Decorator budgets start every test from zero, only if some code created one.
    budget_module = sys.modules.get("tfretrace.budget")
    if budget_module is not None:
        budget_module.reset()
    marker = item.get_closest_marker("max_traces")
    wants_fixture = _FIXTURE in getattr(item, "fixturenames", ())
    config = item.config
    global_max = config.getoption("tfretrace_max_traces")
    summary = config.getoption("tfretrace_summary") or _GATE in config.stash
    # The options alone never import TensorFlow: before it is loaded nothing can trace.
    options_apply = (global_max is not None or summary) and "tensorflow" in sys.modules
    if marker is None and not wants_fixture and not options_apply:
        return
    from tfretrace.integrations.pytest_support import TestWatch, marker_origin

    if marker is not None:
        xla_max = marker.kwargs.get("max_xla_compiles")
        first = marker.args[0] if marker.args else None
        # None for n: a marker on XLA compiles alone, @pytest.mark.max_traces(None, max_xla_compiles=2).
        if not marker.args or not (isinstance(first, int) or (first is None and xla_max is not None)) \
                or isinstance(first, bool):
            pytest.fail("use @pytest.mark.max_traces(n, *functions) with an int n", pytrace=False)
        n, functions = first, marker.args[1:]
        warn_only = bool(marker.kwargs.get("warn_only", False))
        if xla_max is not None:
            from tfretrace.runtime.monitor import xla_unavailable

            why = xla_unavailable()
            if why is not None:  # a compile budget that cannot see compiles would always pass
                pytest.fail(f"@pytest.mark.max_traces(max_xla_compiles=...): {why} (pytest --tfretrace-xla)",
                            pytrace=False)
        try:
            watch = TestWatch(n, functions, origin=marker_origin(n, functions, xla_max), warn_only=warn_only,
                              max_xla_compiles=xla_max, warn=wants_fixture)
        except (TypeError, ValueError) as exc:  # a negative n, or something that is no function
            pytest.fail(f"@pytest.mark.max_traces: {exc}", pytrace=False)
    elif global_max is not None:
        watch = TestWatch(global_max, origin=f"--tfretrace-max-traces={global_max}", warn=wants_fixture)
    else:
        # The fixture's monitor warns at each retrace: `pytest -W error::tfretrace.RetracingWarning`
        # then fails the test (README); the options and markers alone stay silent.
        watch = TestWatch(warn=wants_fixture)
    item.stash[_WATCH] = _start(watch)
    if _GATE in config.stash:
        # A baseline counts each test as if TensorFlow's caches were empty at its start: the
        # calls served by earlier tests' traces are counted as the test's (see test_counts).
        from tfretrace._tf.cache_hits import CacheHits

        item.stash[_HITS] = CacheHits().start()


def _start(watch: TestWatch) -> TestWatch:
    """Start the watch, or fail the test with one line when TensorFlow cannot be monitored."""
    from tfretrace.records.errors import TensorFlowMissingError, UnsupportedVersionError

    try:
        return watch.start()
    except (TensorFlowMissingError, UnsupportedVersionError) as exc:
        why = str(exc).splitlines()[0]
    # A test that asks for a trace budget or monitor cannot be checked without TensorFlow: an
    # error, not a skip, so a broken environment is never mistaken for a pass. Failing outside the
    # except block keeps pytest (9.x shows an exception's context) from printing the cause twice.
    pytest.fail(f"tfretrace: {why}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Count traces against the budget during the test body only."""
    watch = item.stash.get(_WATCH, None)
    if watch is not None:
        watch.arm()
    try:
        result = yield
    except (AssertionError, Warning) as exc:
        # No import to tell them: only a budget raises this AssertionError, and a tfretrace
        # warning is an exception here under `-W error::tfretrace.RetracingWarning`; either shows
        # the test's line and the message, not tfretrace's frames and their locals.
        if type(exc).__module__ == ("tfretrace" if isinstance(exc, Warning) else "tfretrace.budget"):
            from tfretrace.integrations.pytest_support import hide_plumbing

            hide_plumbing(exc)
        raise
    finally:
        if watch is not None:
            watch.disarm()
    if watch is None:
        return result
    swallowed = watch.unraised()
    if swallowed is not None:
        from tfretrace.integrations.pytest_support import hide_plumbing

        __tracebackhide__ = True  # the failure shows the budget's explanation, not this hook
        hide_plumbing(swallowed)
        raise swallowed
    gate = item.config.stash.get(_GATE, None)
    if gate is not None:
        _baseline_check(item, watch, gate)
    return result


def _baseline_check(item: pytest.Item, watch: TestWatch, gate: BaselineGate) -> None:
    """After a passing body: record the test's counts (update) or fail it when it got worse."""
    from tfretrace.integrations.pytest_baseline import counts_to_json, test_counts

    hits = item.stash.get(_HITS, None)
    counts = test_counts(watch.monitor, () if hits is None else hits.reused(os.getcwd()))
    if gate.update:
        item.user_properties.append((_COUNTS, counts_to_json(counts)))
        return
    failure = gate.failure(item.nodeid, counts)
    if failure is not None:
        __tracebackhide__ = True
        pytest.fail(failure, pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the updated baseline once, in the process that prints the results (xdist's controller)."""
    config = session.config
    gate = config.stash.get(_GATE, None)
    if gate is None or not gate.update or hasattr(config, "workerinput"):
        return
    count = gate.write(sorted(config.stash[_RECORDED].items()))
    config.stash[_UPDATED] = f"tfretrace: baseline {gate.path} updated ({count} tests recorded)"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """Stop the test's monitor after its fixtures are gone, keeping its summary."""
    try:
        return (yield)
    finally:
        hits = item.stash.get(_HITS, None)
        if hits is not None:
            hits.stop()
            del item.stash[_HITS]
        watch = item.stash.get(_WATCH, None)
        if watch is not None:
            watch.stop()
            del item.stash[_WATCH]
            if item.config.getoption("tfretrace_summary"):
                lines = watch.summary_lines()
                if lines:
                    item.user_properties.append((_PROPERTY, lines))


class _CountsCollector:
    """Collects each test's counts from call reports: this process's, or a worker's under xdist."""

    def __init__(self, recorded: dict[str, Any]) -> None:
        self.recorded = recorded

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == _COUNTS and isinstance(value, dict):
                self.recorded[report.nodeid] = value


class _SummaryCollector:
    """Collects summary lines from teardown reports: this process's, or a worker's under xdist."""

    def __init__(self, rows: list[tuple[str, list[str]]]) -> None:
        self.rows = rows

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == _PROPERTY and isinstance(value, list):
                self.rows.append((report.nodeid, [str(line) for line in value]))


@pytest.fixture
def tfretrace_monitor(request: pytest.FixtureRequest) -> Monitor:
    """A tfretrace Monitor recording every trace of this test (fixtures included); stopped after it."""
    watch: TestWatch | None = request.node.stash.get(_WATCH, None)
    if watch is None:  # requested through getfixturevalue: setup could not see it coming
        from tfretrace.integrations.pytest_support import TestWatch

        watch = _start(TestWatch(warn=True))
        request.node.stash[_WATCH] = watch
    return watch.monitor


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """With --tfretrace-summary: every test that traced, with its functions, counts and causes."""
    updated = config.stash.get(_UPDATED, None)
    if updated is not None:
        terminalreporter.write_line(updated)
    prevention = config.stash.get(_PREVENTION, None)
    if prevention is not None:
        from tfretrace.records.prevention import render

        terminalreporter.section("tfretrace: prevention")
        for line in render(prevention.report()).splitlines():
            terminalreporter.write_line(line)
    if not config.getoption("tfretrace_summary"):
        return
    terminalreporter.section("tfretrace: tf.function traces per test")
    rows = config.stash.get(_SUMMARY, [])
    if not rows:
        terminalreporter.write_line("no test traced a tf.function")
    for nodeid, lines in rows:
        terminalreporter.write_line(nodeid)
        for line in lines:
            terminalreporter.write_line(f"  {line}")
