"""pytest plugin wiring for trace budgets (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

# Wiring only: pytest loads this module into every run once tfretrace is installed, so it
# imports nothing of TensorFlow and nothing of the monitor until a test asks for them.
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tfretrace._pytest_support import TestWatch
    from tfretrace.monitor import Monitor

_WATCH: pytest.StashKey[TestWatch] = pytest.StashKey()
_SUMMARY: pytest.StashKey[list[tuple[str, list[str]]]] = pytest.StashKey()
_FIXTURE = "tfretrace_monitor"


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
        "--tfretrace-max-traces",
        type=int,
        default=None,
        metavar="N",
        help="fail a test whose body traces any tf.function more than N times "
        "(a max_traces marker overrides it)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker so that --strict-markers accepts it."""
    config.addinivalue_line(
        "markers",
        "max_traces(n, *functions): fail when the test body traces a tf.function more than n "
        "times (only the named functions or function objects, if given); see tfretrace docs/budgets.md",
    )
    config.stash[_SUMMARY] = []


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
    summary = config.getoption("tfretrace_summary")
    # The options alone never import TensorFlow: before it is loaded nothing can trace.
    options_apply = (global_max is not None or summary) and "tensorflow" in sys.modules
    if marker is None and not wants_fixture and not options_apply:
        return
    from tfretrace._pytest_support import TestWatch, marker_origin

    if marker is not None:
        if not marker.args or not isinstance(marker.args[0], int) or isinstance(marker.args[0], bool):
            pytest.fail("use @pytest.mark.max_traces(n, *functions) with an int n", pytrace=False)
        n, functions = marker.args[0], marker.args[1:]
        warn_only = bool(marker.kwargs.get("warn_only", False))
        watch = TestWatch(n, functions, origin=marker_origin(n, functions), warn_only=warn_only)
    elif global_max is not None:
        watch = TestWatch(global_max, origin=f"--tfretrace-max-traces={global_max}")
    else:
        watch = TestWatch()
    item.stash[_WATCH] = watch.start()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Count traces against the budget during the test body only."""
    watch = item.stash.get(_WATCH, None)
    if watch is None:
        return (yield)
    watch.arm()
    try:
        result = yield
    finally:
        watch.disarm()
    swallowed = watch.unraised()
    if swallowed is not None:
        raise swallowed
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """Stop the test's monitor after its fixtures are gone, keeping its summary."""
    try:
        return (yield)
    finally:
        watch = item.stash.get(_WATCH, None)
        if watch is not None:
            watch.stop()
            del item.stash[_WATCH]
            if item.config.getoption("tfretrace_summary"):
                lines = watch.summary_lines()
                if lines:
                    item.config.stash[_SUMMARY].append((item.nodeid, lines))


@pytest.fixture
def tfretrace_monitor(request: pytest.FixtureRequest) -> Monitor:
    """A tfretrace Monitor recording every trace of this test (fixtures included); stopped after it."""
    watch: TestWatch | None = request.node.stash.get(_WATCH, None)
    if watch is None:  # requested through getfixturevalue: setup could not see it coming
        from tfretrace._pytest_support import TestWatch

        watch = TestWatch().start()
        request.node.stash[_WATCH] = watch
    return watch.monitor


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """With --tfretrace-summary: every test that traced, with its functions, counts and causes."""
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
