"""The per-test trace watch behind the pytest plugin: one monitor, the test's budget, its summary."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

from tfretrace._util.text import printable
from tfretrace._util.tracebacks import PACKAGE_DIR, unlink_frames
from tfretrace.budget import BudgetExceededError, Limit, function_key
from tfretrace.runtime.monitor import Monitor
from tfretrace.runtime.state import FunctionState


def marker_origin(max_traces: int | None, functions: Iterable[Any], max_xla_compiles: int | None = None) -> str:
    """How the marker reads in an error: ``@pytest.mark.max_traces(1, 'step')``."""
    names = [repr(f) if isinstance(f, str) else getattr(f, "__name__", "fn") for f in functions]
    if max_xla_compiles is not None:
        names.append(f"max_xla_compiles={max_xla_compiles}")
    return f"@pytest.mark.max_traces({', '.join([str(max_traces), *names])})"


class TestWatch:
    """Monitors one test: enforces its budget while armed (the test body) and summarises its traces.

    ``functions`` are names (matched against qualified names, ``step`` matches ``Model.step``) or
    function objects (matched by code); none means every function.
    """

    __test__ = False  # not a test class, whatever pytest's collection thinks of the name

    def __init__(
        self,
        max_traces: int | None = None,
        functions: Iterable[Any] = (),
        *,
        origin: str = "",
        warn_only: bool = False,
        max_xla_compiles: int | None = None,
        warn: bool = False,
    ) -> None:
        # warn: the fixture's monitor emits RetracingWarning, so `pytest -W error::...` gates on it.
        self.monitor = Monitor(warn=warn, log=False)
        self.limit: Limit | None = None
        if max_traces is not None or max_xla_compiles is not None:
            functions = tuple(functions)
            names = [f for f in functions if isinstance(f, str)]
            keys = [function_key(f) for f in functions if not isinstance(f, str)]
            self.limit = Limit(
                max_traces,
                warn_only=warn_only,
                keys=keys,
                names=names,
                origin=origin or marker_origin(max_traces, functions),
                max_xla_compiles=max_xla_compiles,
            )
            # Fixtures warm functions up before the body: only the body is counted (see arm()).
            self.limit.armed = False
            self.limit.attach(self.monitor)

    def start(self) -> TestWatch:
        """Start monitoring (imports TensorFlow)."""
        self.monitor.start()
        return self

    def stop(self) -> None:
        """Stop monitoring; the record stays readable."""
        self.monitor.stop()
        if self.limit is not None:
            self.limit.detach(self.monitor)

    def arm(self) -> None:
        """Start counting against the budget (the test body begins)."""
        # pytest's capture puts its own file on fd 2 for each phase: read the compile log again.
        self.monitor.rearm_xla()
        if self.limit is not None:
            self.limit.armed = True

    def disarm(self) -> None:
        """Stop counting against the budget (the test body ended), after the body's compiles."""
        if self.limit is not None:
            if self.limit.max_xla_compiles is not None:
                self.monitor.sync_xla()
            self.limit.armed = False

    def unraised(self) -> BudgetExceededError | None:
        """A budget breach that the test swallowed (a broad except), to fail the test anyway."""
        if self.limit is None or self.limit.warn_only or not self.limit.violations:
            return None
        return self.limit.violations[0]

    def summary_lines(self) -> list[str]:
        """One line per traced function: ``name (file:line): traces=2 causes=first-trace,shape-changed``.

        Causes repeat as ``shape-changed*3``; ``earlier=N`` counts the traces the function had
        before the test (not in ``traces``); traces the budget refused follow as ``refused=...``.
        """
        # Exact counts, however many breach errors a warn-only budget kept.
        refused: dict[str, Counter[str]] = {}
        for (function, cause), n in ({} if self.limit is None else self.limit.refused).items():
            refused.setdefault(function, Counter())[cause] += n
        lines = []
        for state in sorted(self.monitor.states(), key=lambda s: s.name):
            # The test's own traces; those the function had before the test's monitor met it
            # (earlier tests, module import) are counted apart: they are not this test's doing.
            own = state.traces - state.earlier
            if not own and state.name not in refused:
                continue
            causes = _counted(Counter(e.cause for e in state.events() if not e.earlier))
            line = f"{_shown_name(state)} ({state.location}): traces={own} causes={causes}"
            if state.earlier:
                line += f" earlier={state.earlier}"
            if state.xla_compiles:
                line += f" xla_compiles={state.xla_compiles} compile_s={state.xla_seconds:.3f}"
            if state.name in refused:
                line += f" refused={_counted(refused[state.name])}"
            lines.append(printable(line))  # names and paths reach the terminal
        return lines


def _shown_name(state: FunctionState) -> str:
    """The name the run report gives the function: ``sequential.evaluate`` for Keras' own, not its qualname."""
    if state.keras is None:
        return state.name
    from tfretrace.records.function_report import FunctionReport

    # The report's own rule (FunctionReport.display_name): one model, or several named.
    return FunctionReport(state.name, state.location, 0, 0, 0.0, 0, tuple(state.events()),
                          keras=state.keras).display_name()


def _counted(causes: Counter[str]) -> str:
    return ",".join(c if n == 1 else f"{c}*{n}" for c, n in causes.items())


# TensorFlow's own error filter re-raises every error from a tf.function call; for a budget error
# its frame only shows TensorFlow's plumbing between the test's line and the explanation.
_TF_RERAISE = os.path.join("tensorflow", "python", "util", "traceback_utils.py")


def hide_plumbing(exc: BaseException) -> None:
    """Unlink tfretrace's frames and TensorFlow's re-raise frame from a budget error's traceback.

    pytest then shows the test's line and the explanation, nothing of either library.
    """
    unlink_frames(exc, lambda name: name.startswith(PACKAGE_DIR) or name.endswith(_TF_RERAISE))
