"""The pytest plugin's baseline: each test's trace counts, checked against or written to a baseline file."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from typing import Any

from tfretrace._tf.cache_hits import Reused
from tfretrace._util.io import is_source_file
from tfretrace.compare.baseline import Baseline, load_baseline, stored
from tfretrace.compare.comparison import Counts, Run, cause_counts, compare
from tfretrace.explain.analyzer import Prior, explain
from tfretrace.records.events import EXPECTED_CAUSES
from tfretrace.records.function_key import FunctionKey, module_of_path
from tfretrace.render.comparison import reason_line
from tfretrace.runtime.monitor import Monitor


def test_counts(monitor: Monitor, reused: Iterable[Reused] = ()) -> tuple[Counts, ...]:
    """What the test traced so far, per function, counted as if every cache were empty at its start.

    Which tests ran before it in the process (``-k``, ``-n``, the order) must not change a test's
    counts. ``reused`` names the traces made before the test (an earlier test's, a module-level
    warm-up) that its calls reused: with empty caches each would have been one of its own traces,
    and the retraces and their causes are those of that sequence. The test's first trace of a
    function is its first trace, never a retrace, even when an earlier test traced it before.
    """
    hits = {r.key: r for r in reused}
    out = []
    for state in monitor.states():
        events = state.events()
        own = [e for e in events if not e.earlier]
        traces = state.traces - state.earlier
        entry = hits.pop(state.key, None)
        if traces <= 0 and not own and entry is None:
            continue
        if entry is not None:
            traces += entry.traces
            retraces, causes = _replayed(entry)
        else:
            # Exact retraces whatever the bounded history kept, less those made before the test.
            retraces = state.retraces - sum(1 for e in events if e.earlier and e.is_retrace)
            if state.earlier and own and own[0].is_retrace:
                retraces -= 1
                own = own[1:]
            causes = cause_counts(own)
        key = state.function_key
        if not isinstance(key, FunctionKey):
            key = FunctionKey(module_of_path(state.location.rpartition(":")[0] or state.location), state.name)
        name = state.name if state.keras is None else f"{state.keras.model}.{state.keras.method}"
        out.append(Counts(key, name, state.location, traces, retraces, causes,
                          state.seconds, state.xla_compiles, state.xla_seconds, tuple(own)))
    # Functions the test called without tracing: every call served by an earlier trace.
    for entry in hits.values():
        retraces, causes = _replayed(entry)
        out.append(Counts(entry.function_key, entry.name, entry.location, entry.traces, retraces, causes))
    return tuple(out)


def _replayed(entry: Reused) -> tuple[int, tuple[tuple[str, int], ...]]:
    """Retraces and their causes of the traces the test would have made with empty caches."""
    priors: list[Prior] = []
    found: dict[str, int] = {}
    for index, (token, signature, context) in enumerate(entry.sequence, start=1):
        cause = explain(token, signature, context, priors).cause
        if cause not in EXPECTED_CAUSES:
            found[cause] = found.get(cause, 0) + 1
        priors.append(Prior(index, token, signature, context))
    return sum(found.values()), tuple(sorted(found.items()))


class BaselineGate:
    """One process's view of the baseline file: checks tests against it, or collects their counts."""

    def __init__(self, path: str, update: bool) -> None:
        self.path = path
        self.update = update
        self._baseline: Baseline | None = None

    @classmethod
    def open(cls, path: str, update: bool) -> BaselineGate:
        """The gate of ``--tfretrace-baseline path``; ValueError (one line) for a missing or damaged file.

        Updating may start from no file; checking needs one. A file there is read now either
        way: a damaged one is a usage error before any test runs, not a traceback after all ran.
        """
        gate = cls(path, update)
        if update and is_source_file(path):
            # The baseline replaces its file: never a test module, conftest.py or a notebook.
            raise ValueError(f"--tfretrace-baseline {path}: Python source or a notebook: "
                             "the baseline would overwrite it")
        if not update and not os.path.isfile(path):
            raise ValueError(f"--tfretrace-baseline {path}: no such file (write it with "
                             "--tfretrace-update-baseline)")
        if os.path.exists(path):
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
        lines.append("If this is intended, record it: pytest --tfretrace-baseline "
                     f"{shlex.quote(self.path)} --tfretrace-update-baseline")
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


