"""Baseline files: per-function trace counts kept in the repository, small, stable and sorted."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfretrace._util import checked as C
from tfretrace._util.io import atomic_write_text
from tfretrace.compare.comparison import Counts, Run, run_of
from tfretrace.records.function_key import FunctionKey
from tfretrace.records.session import Session, SessionFormatError, read_document

__all__ = ["BASELINE_MARK", "BASELINE_SCHEMA", "Baseline", "baseline_of", "load_baseline", "load_run", "stored"]

# The field that tells a baseline from a session, and its format's number.
BASELINE_MARK = "tfretrace_baseline"
BASELINE_SCHEMA = 1


@dataclass(frozen=True)
class Baseline:
    """Counts of a run (``functions``) or of each test of a pytest session (``tests``), and versions.

    Only what review should see changing: no seconds (they differ on every run) and no line
    numbers (a line added above a function would change them); functions sorted by key.
    """

    functions: tuple[Counts, ...] = ()
    tests: tuple[tuple[str, tuple[Counts, ...]], ...] = ()
    tensorflow: str | None = None
    keras: str | None = None

    def run(self, label: str) -> Run:
        """The baseline's functions as the base side of a comparison."""
        return Run(label, self.functions, self.tensorflow, self.keras)

    def test(self, nodeid: str) -> tuple[Counts, ...] | None:
        """The stored functions of one test, or None when the baseline does not know the test."""
        return dict(self.tests).get(nodeid)

    def with_tests(self, tests: Iterable[tuple[str, tuple[Counts, ...]]], tensorflow: str | None,
                   keras: str | None) -> Baseline:
        """This baseline with these tests' counts replaced (tests not given are kept as they are)."""
        merged = dict(self.tests)
        merged.update(tests)
        return Baseline(self.functions, tuple(sorted(merged.items())), tensorflow or self.tensorflow,
                        keras or self.keras)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        data: dict[str, Any] = {BASELINE_MARK: BASELINE_SCHEMA, "tensorflow": self.tensorflow, "keras": self.keras}
        if self.functions or not self.tests:
            data["functions"] = _entries(self.functions)
        if self.tests:
            data["tests"] = {nodeid: _entries(functions) for nodeid, functions in self.tests}
        return data

    def to_json(self) -> str:
        """Sorted, indented JSON: two runs with the same counts write the same bytes."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the baseline atomically."""
        return atomic_write_text(path, self.to_json())

    @classmethod
    def from_dict(cls, data: Any, source: str = "<data>") -> Baseline:
        """Read a baseline's JSON form; SessionFormatError (one line) on anything else."""
        if not isinstance(data, dict) or BASELINE_MARK not in data:
            raise SessionFormatError(f"{source}: not a tfretrace baseline (no {BASELINE_MARK!r})")
        if type(data[BASELINE_MARK]) is not int or data[BASELINE_MARK] != BASELINE_SCHEMA:
            raise SessionFormatError(f"{source}: baseline format {data[BASELINE_MARK]!r} is not supported "
                                     f"(this tfretrace reads {BASELINE_SCHEMA})")
        try:
            tests = C.mapping(data.get("tests", {}), "tests")
            return cls(
                functions=_read_entries(data.get("functions", []), "functions"),
                tests=tuple(sorted((C.text(nodeid, "tests"), _read_entries(entries, f"tests[{nodeid!r}]"))
                                   for nodeid, entries in tests.items())),
                tensorflow=C.optional_text(data.get("tensorflow"), "tensorflow"),
                keras=C.optional_text(data.get("keras"), "keras"),
            )
        except C.FieldError as exc:
            raise SessionFormatError(f"{source}: malformed tfretrace baseline: {exc}") from None


def _order(c: Counts) -> tuple[str, str, str, str, int]:
    return (c.key.module, c.key.qualname, c.key.code_hash or "", c.name, c.traces)


def _entries(functions: Iterable[Counts]) -> list[dict[str, Any]]:
    return [
        {
            "module": c.key.module, "qualname": c.key.qualname, "code_hash": c.key.code_hash, "name": c.name,
            "traces": c.traces, "retraces": c.retraces, "causes": dict(c.causes), "xla_compiles": c.xla_compiles,
            # A nested def the run's fix plan moves to module level, by its new name: a later run of
            # the fixed program (its def edited too, say a signature added) is the same function.
            **({"moved_to": c.moved_to} if c.moved_to is not None else {}),
        }
        for c in sorted(functions, key=_order)
    ]


def _read_entries(value: Any, where: str) -> tuple[Counts, ...]:
    return C.each(value, where, _read_entry)


def _read_entry(entry: Any, here: str) -> Counts:
    entry = C.mapping(entry, here)
    causes = C.mapping(entry.get("causes", {}), f"{here}.causes")
    return Counts(
        key=FunctionKey.from_dict(entry, here),
        name=C.text(entry.get("name", entry.get("qualname")), f"{here}.name"),
        traces=C.count(entry.get("traces", 0), f"{here}.traces"),
        retraces=C.count(entry.get("retraces", 0), f"{here}.retraces"),
        causes=tuple(sorted((C.text(k, f"{here}.causes"), C.count(v, f"{here}.causes[{k!r}]"))
                            for k, v in causes.items())),
        xla_compiles=C.count(entry.get("xla_compiles", 0), f"{here}.xla_compiles"),
        moved_to=C.optional_text(entry.get("moved_to"), f"{here}.moved_to"),
    )


def stored(functions: Iterable[Counts]) -> tuple[Counts, ...]:
    """Functions' counts as a baseline keeps them (no seconds, places or events), in its order."""
    kept = (Counts(c.key, c.name, traces=c.traces, retraces=c.retraces, causes=c.causes,
                   xla_compiles=c.xla_compiles, moved_to=c.moved_to) for c in functions)
    return tuple(sorted(kept, key=_order))


def baseline_of(session: Session) -> Baseline:
    """The baseline of a monitored run."""
    return Baseline(stored(run_of(session, "").functions), tensorflow=session.tensorflow, keras=session.keras)


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline file; one-line SessionFormatError on bad input."""
    data, source = read_document(path)
    return Baseline.from_dict(data, source)


def load_run(path: str | os.PathLike[str]) -> Run:
    """A session or a baseline file as one side of a comparison, named by its path."""
    data, source = read_document(path)
    if isinstance(data, dict) and BASELINE_MARK in data:
        baseline = Baseline.from_dict(data, source)
        if baseline.tests and not baseline.functions:
            raise SessionFormatError(f"{source}: a pytest baseline (per test): compare it with pytest "
                                     "--tfretrace-baseline, not as a run")
        return baseline.run(source)
    return run_of(Session.from_dict(data, source), source)
