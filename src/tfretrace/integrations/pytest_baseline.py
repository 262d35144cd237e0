"""The pytest plugin's baseline: each test's trace counts, checked against or written to a baseline file."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tfretrace._util.io import is_source_file
from tfretrace.compare.baseline import Baseline, load_baseline, stored
from tfretrace.compare.comparison import Counts, Run, cause_counts, compare
from tfretrace.records.function_key import FunctionKey, module_of_path
from tfretrace.render.comparison import reason_line
from tfretrace.runtime.monitor import Monitor


def test_counts(monitor: Monitor) -> tuple[Counts, ...]:
    """What the test traced so far: per function, its own traces (not those before the test), by cause.

    A test's first trace of a function counts as its first trace even when an earlier test (in
    the same process) traced the function before: which tests ran before in a worker changes
    with ``pytest -n``, and must not change a test's retraces.
    """
    out = []
    for state in monitor.states():
        events = state.events()
        own = [e for e in events if not e.earlier]
        traces = state.traces - state.earlier
        if traces <= 0 and not own:
            continue
        # Exact retraces whatever the bounded history kept, less those made before the test.
        retraces = state.retraces - sum(1 for e in events if e.earlier and e.is_retrace)
        if state.earlier and own and own[0].is_retrace:
            retraces -= 1
            own = own[1:]
        key = state.function_key
        if not isinstance(key, FunctionKey):
            key = FunctionKey(module_of_path(state.location.rpartition(":")[0] or state.location), state.name)
        name = state.name if state.keras is None else f"{state.keras.model}.{state.keras.method}"
        out.append(Counts(key, name, state.location, traces, retraces, cause_counts(own),
                          state.seconds, state.xla_compiles, state.xla_seconds, tuple(own)))
    return tuple(out)


class BaselineGate:
    """One process's view of the baseline file: checks tests against it, or collects their counts."""

    def __init__(self, path: str, update: bool) -> None:
        self.path = path
        self.update = update
        self._baseline: Baseline | None = None

    @classmethod
    def open(cls, path: str, update: bool) -> BaselineGate:
        """The gate of ``--tfretrace-baseline path``; ValueError (one line) for a missing or damaged file.

        Updating may start from no file; checking needs one, and reads it now.
        """
        gate = cls(path, update)
        if update and is_source_file(path):
            # The baseline replaces its file: never a test module, conftest.py or a notebook.
            raise ValueError(f"--tfretrace-baseline {path}: Python source or a notebook: "
                             "the baseline would overwrite it")
        if not update:
            if not os.path.isfile(path):
                raise ValueError(f"--tfretrace-baseline {path}: no such file (write it with "
                                 "--tfretrace-update-baseline)")
            gate.baseline()  # SessionFormatError is a ValueError
        return gate

    def baseline(self) -> Baseline:
        """The stored baseline, read once per process (an empty one when updating a missing file)."""
        if self._baseline is None:
            if self.update and not os.path.exists(self.path):
                self._baseline = Baseline()
            else:
                self._baseline = load_baseline(self.path)
        return self._baseline

    def failure(self, nodeid: str, counts: tuple[Counts, ...], tolerance: int = 0) -> str | None:
        """Why this test got worse than its baseline, or None (also for a test the baseline lacks)."""
        before = self.baseline().test(nodeid)
        if before is None:
            return None
        comparison = compare(Run("baseline", before), Run("test", counts), tolerance)
        if not comparison.worse:
            return None
        lines = [f"tfretrace: this test traces more than its baseline ({self.path}):"]
        for delta in comparison.worse:
            base, head = delta.retraces
            lines.append(f"  {delta.name} ({delta.location}): retraces {base} -> {head}, "
                         f"traces {delta.traces[0]} -> {delta.traces[1]}")
            for cause in delta.new_causes:
                lines.append(f"    {reason_line(cause)}")
            if delta.xla_compiles[1] > delta.xla_compiles[0]:
                lines.append(f"    XLA compiles {delta.xla_compiles[0]} -> {delta.xla_compiles[1]}")
        lines.append("If this is intended, record it: pytest --tfretrace-update-baseline")
        return "\n".join(lines)

    def write(self, tests: Iterable[tuple[str, Any]]) -> int:
        """Replace the given tests' entries (counts_to_json's data) in the file; return how many."""
        rows, tensorflow, keras = [], None, None
        for nodeid, data in tests:
            rows.append((nodeid, _counts_from_json(data.get("functions", []))))
            tensorflow, keras = data.get("tensorflow") or tensorflow, data.get("keras") or keras
        self.baseline().with_tests(rows, tensorflow, keras).save(self.path)
        return len(rows)


def counts_to_json(counts: tuple[Counts, ...]) -> dict[str, Any]:
    """A test's counts and the versions it ran on as plain JSON data, to travel in a report (xdist)."""
    from tfretrace._tf import versions

    tensorflow, keras = versions.loaded_versions()
    return {"functions": Baseline(stored(counts)).to_dict()["functions"], "tensorflow": tensorflow, "keras": keras}


def _counts_from_json(entries: Any) -> tuple[Counts, ...]:
    return Baseline.from_dict({"tfretrace_baseline": 1, "functions": entries}, "report").functions


