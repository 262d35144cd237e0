"""The version test matrix (``make test-matrix``): one virtual environment per supported TensorFlow
and Keras, the test suite and the examples run in each, and a table of the results.

    python tools/matrix.py                      # every row
    python tools/matrix.py --rows tf2.15-keras2,tf2.21-tfkeras
    python tools/matrix.py --rows tf2.21-tfkeras --tests tf2.21-tfkeras=tests/test_keras.py,tests/test_examples.py
    python tools/matrix.py --sessions upgrade/ --program train.py   # also one session per row:
    tfretrace compare upgrade/tf2.21-keras3.15.json upgrade/tf2.18-keras3.6.json   # what an upgrade changes

Environments live in .matrix/<row>/ (git-ignored) and are reused while their requirements are
unchanged. The reference row (TF 2.21 + Keras 3.15) uses the project's own .venv when it has
exactly those versions. Each row runs the tests that need TensorFlow (marked ``tf``) but the browser
test and those marked ``single_env`` (packaging, docs, pip: the same in every environment): the rest
run tfretrace's own Python alone, which no TensorFlow version changes; ``--tests ROW=FILES`` runs only
those test files in that row. An example "equals 2.21" when every function has the same causes and trace
counts as in the reference row (Keras' functions compared by role, since their names differ
between Keras versions). Exit status 0 only when every row that was asked for is green.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import venv
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from tfretrace._tf.keras import KERAS_ROLES as ROLES  # noqa: E402  (imports nothing of TensorFlow)

MATRIX = ROOT / ".matrix"
REFERENCE = "tf2.21-keras3.15"


@dataclass(frozen=True)
class Row:
    """One environment of the matrix."""

    name: str
    requirements: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    # The nightly may be missing from the index or broken on a given day: the row then says why.
    optional: bool = False


ROWS = (
    Row("tf2.15-keras2", ("tensorflow-cpu==2.15.1",)),
    Row("tf2.16-keras3.4", ("tensorflow-cpu==2.16.2", "keras==3.4.1")),
    Row("tf2.18-keras3.6", ("tensorflow-cpu==2.18.1", "keras==3.6.0")),
    Row(REFERENCE, ("tensorflow-cpu==2.21.0", "keras==3.15.1")),
    # TF Probability 0.25 needs TensorFlow 2.18+ and tf-keras: tests/test_library_objects.py runs here.
    Row(
        "tf2.21-tfkeras",
        ("tensorflow-cpu==2.21.0", "tf-keras==2.21.0", "tensorflow-probability==0.25.0"),
        {"TF_USE_LEGACY_KERAS": "1"},
    ),
    Row("nightly", ("--pre", "tf-nightly", "keras-nightly"), optional=True),
)

# Examples whose report legitimately differs from the reference on a Keras generation, and why.
# tests/test_examples.py asserts the behaviour each Keras really has (against TensorFlow's count).
KNOWN_DIFFERENCES = {
    ("2", "keras_predict_loop.py"): "Keras 2 predicts through a dataset whose batch dimension is None "
    "from the first call: no shape-changed retrace (TensorFlow counts 1 trace too)",
}


@dataclass
class Result:
    """What one row produced."""

    row: Row
    versions: str = ""
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    examples: dict[str, Any] | None = None
    equal: list[str] = field(default_factory=list)
    explained: dict[str, str] = field(default_factory=dict)
    differing: list[str] = field(default_factory=list)
    problem: str | None = None
    seconds: float = 0.0

    @property
    def green(self) -> bool:
        return self.problem is None and self.failed == 0 and not self.differing and self.examples is not None


def python_of(row: Row) -> Path:
    """The interpreter of a row, creating or refreshing its environment as needed."""
    if row.name == REFERENCE:
        own = ROOT / ".venv" / "bin" / "python"
        if own.exists() and _versions(own, row.env).startswith("TF 2.21.0 / keras 3.15."):
            return own
    home = MATRIX / row.name
    python = home / "bin" / "python"
    stamp, project_stamp = home / ".installed", home / ".project"
    wanted = " ".join(row.requirements)
    project = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not (stamp.exists() and stamp.read_text().strip() == wanted and python.exists()):
        print(f"[matrix] {row.name}: installing {wanted} (a few minutes)", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        # The pip Python bundles (23.2) refuses git+file:/// requirements, which the install-path
        # tests use for a local clone: the row's pip is the current one, as the main environment's.
        _run([*pip, "--upgrade", "pip"], row.env)
        _run([*pip, *row.requirements, "pytest>=8"], row.env)
        stamp.write_text(wanted)
        project_stamp.unlink(missing_ok=True)
    if not (project_stamp.exists() and project_stamp.read_text() == project):
        # tfretrace itself, editable, without its TensorFlow extra (the row's versions stay as
        # pinned); again whenever pyproject.toml changes its dependencies.
        _run([*pip, "-e", f"{ROOT}[dev]"], row.env)
        project_stamp.write_text(project)
    return python


def _run(command: list[str], extra_env: dict[str, str]) -> None:
    done = subprocess.run(command, env=_env(extra_env), capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit status {done.returncode}")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_USE_LEGACY_KERAS", "VIRTUAL_ENV")}
    env.update(extra)
    env["PYTHONPATH"] = str(ROOT / "src")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def _versions(python: Path, extra_env: dict[str, str]) -> str:
    code = (
        "import tensorflow as tf, sys; from tfretrace._tf import versions as v;"
        "k = v.keras_in_use() or ('-', '-'); print(f'TF {tf.__version__} / {k[0]} {k[1]}')"
    )
    done = subprocess.run([str(python), "-c", code], env=_env(extra_env), capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else "?"


def _record_path(row: Row, suffix: str) -> Path:
    """Where a row's results are written, under .matrix/, which this makes if needed: the
    reference row uses the main environment, so on a fresh checkout nothing else has made it."""
    MATRIX.mkdir(parents=True, exist_ok=True)
    return MATRIX / f"{row.name}.{suffix}"


def run_tests(python: Path, result: Result, files: list[str] | None = None) -> None:
    """The TensorFlow tests (of ``files``, or all) but the browser and single-environment ones; JUnit XML read back."""
    report = _record_path(result.row, "junit.xml")
    report.unlink(missing_ok=True)  # a report left by an earlier run must not pass for this one's
    # Two workers, as make test: the suite is mostly subprocesses running TensorFlow, and CI has 2 cores.
    command = [str(python), "-m", "pytest", "-q", "-n", "2", "-m", "tf and not browser and not single_env",
               f"--junitxml={report}", "-p", "no:cacheprovider", *(files or [])]
    subprocess.run(command, env=_env(result.row.env), cwd=ROOT, capture_output=True, text=True)
    if not report.exists():
        result.problem = "pytest wrote no report"
        return
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            result.failed += 1
            result.failures.append(name)
        elif case.find("skipped") is not None:
            result.skipped += 1
        else:
            result.passed += 1


def run_examples(python: Path, result: Result) -> None:
    """All examples in one process, through tests/test_examples.py's runner."""
    out = _record_path(result.row, "examples.json")
    examples = sorted((ROOT / "examples").glob("*.py"))
    first = ROOT / "examples" / "context_changed.py"  # splits the CPU: must run first
    ordered = [first, *(p for p in examples if p != first)]
    command = [str(python), str(ROOT / "tests" / "test_examples.py"), str(out), *map(str, ordered)]
    done = subprocess.run(command, env=_env(result.row.env), cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        result.problem = "examples did not run: " + (done.stderr.strip().splitlines() or ["?"])[-1]
        return
    result.examples = json.loads(out.read_text())


def write_session(python: Path, result: Result, program: Path, folder: Path) -> Path | None:
    """Run ``program`` under ``tfretrace run`` with the row's interpreter, saving its session as
    ``folder/<row>.json``, so that ``tfretrace compare`` shows what moving between rows changes."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder.resolve() / f"{result.row.name}.json"
    target.unlink(missing_ok=True)
    command = [str(python), "-m", "tfretrace", "run", "--no-progress", "--save", str(target), str(program.resolve())]
    # From the program's folder: function keys (their modules) are taken from there in every row.
    done = subprocess.run(command, env=_env(result.row.env), cwd=program.resolve().parent, capture_output=True,
                          text=True)
    if not target.exists():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        result.problem = "no session written: " + (lines[-1] if lines else f"exit status {done.returncode}")
        return None
    return target


def summary(record: dict[str, Any]) -> Any:
    """What must match between rows: per function (Keras' by role), its causes and trace count."""
    rows = []
    for report in record["functions"]:
        method = report.get("keras_method")
        name = f"keras {ROLES.get(method, method)}" if method else report["name"]
        rows.append((name, [e["cause"] for e in report["events"]], report["traces"]))
    return record["error"], record["internal_errors"], sorted(rows, key=lambda r: (r[0], r[2], r[1]))


def compare(result: Result, reference: dict[str, Any]) -> None:
    """Sort the row's examples into equal, explained differences and unexplained ones."""
    assert result.examples is not None
    keras_major = result.versions.rsplit(" ", 1)[-1].split(".")[0]
    for name, record in sorted(reference.items()):
        mine = result.examples.get(name)
        if mine is not None and summary(mine) == summary(record):
            result.equal.append(name)
        elif mine is not None and mine["error"] is None and (keras_major, name) in KNOWN_DIFFERENCES:
            result.explained[name] = KNOWN_DIFFERENCES[(keras_major, name)]
        else:
            result.differing.append(name)


def table(results: list[Result], total: int) -> str:
    """The printed matrix."""
    lines = [f"{'environment':<18} {'versions':<40} {'tests passed/failed/skipped':<28} "
             f"{'examples = 2.21':<16} {'time':>6}  status"]
    for r in results:
        tests = f"{r.passed}/{r.failed}/{r.skipped}"
        examples = f"{len(r.equal)}/{total}" + (f" (+{len(r.explained)} explained)" if r.explained else "")
        status = "green" if r.green else ("SKIPPED" if r.problem and r.row.optional else "FAIL")
        lines.append(f"{r.row.name:<18} {r.versions[:40]:<40} {tests:<28} {examples:<16} {r.seconds:>5.0f}s  {status}")
    for r in results:
        if r.problem:
            lines.append(f"  {r.row.name}: {r.problem}")
        for name in r.failures:
            lines.append(f"  {r.row.name}: test failed: {name}")
        for name in r.differing:
            lines.append(f"  {r.row.name}: example differs from 2.21: {name}")
        for name, why in r.explained.items():
            lines.append(f"  {r.row.name}: {name} differs as expected: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", help="comma-separated row names (default: all)")
    parser.add_argument("--sessions", metavar="DIR", type=Path,
                        help="also run --program in each row and save its session as DIR/<row>.json")
    parser.add_argument("--program", metavar="SCRIPT", type=Path, default=ROOT / "examples" / "demo_train.py",
                        help="the program --sessions runs (default examples/demo_train.py)")
    parser.add_argument("--tests", action="append", default=[], metavar="ROW=FILES",
                        help="run only these comma-separated test files in ROW (repeatable)")
    ns = parser.parse_args(argv)
    selected: dict[str, list[str]] = {}
    for item in ns.tests:
        row_name, sep, files = item.partition("=")
        missing = [f for f in files.split(",") if f and not (ROOT / f).is_file()]
        if not sep or not files or missing:
            print(f"matrix: --tests {item}: want ROW=FILE,FILE with existing test files"
                  f"{' (no ' + ', '.join(missing) + ')' if missing else ''}", file=sys.stderr)
            return 2
        selected[row_name] = [f for f in files.split(",") if f]
    if ns.sessions is not None and not ns.program.is_file():
        print(f"matrix: --program {ns.program}: no such file", file=sys.stderr)
        return 2
    names = [r.name for r in ROWS]
    wanted = ns.rows.split(",") if ns.rows else names
    unknown = [n for n in [*wanted, *selected] if n not in names]
    if unknown:
        print(f"matrix: unknown row(s) {', '.join(unknown)}; rows are {', '.join(names)}", file=sys.stderr)
        return 2
    # The reference row runs first (its examples are what the others are compared with), even
    # when it was not asked for: it is then only used for the comparison.
    order = [REFERENCE, *(n for n in wanted if n != REFERENCE)]
    results: list[Result] = []
    reference: dict[str, Any] | None = None
    for name in order:
        row = next(r for r in ROWS if r.name == name)
        result = Result(row)
        start = time.perf_counter()
        try:
            python = python_of(row)
            result.versions = _versions(python, row.env)
            print(f"[matrix] {name}: {result.versions}", flush=True)
            run_examples(python, result)
            if name in wanted:
                run_tests(python, result, selected.get(name))
            if ns.sessions is not None:  # the reference row's too: it is what the others compare with
                write_session(python, result, ns.program, ns.sessions)
        except RuntimeError as exc:
            result.problem = f"could not install: {exc}"
        result.seconds = time.perf_counter() - start
        if name == REFERENCE:
            reference = result.examples
            if result.problem and name not in wanted:
                print(f"[matrix] {name}: {result.problem}", flush=True)  # else the table says it
        if reference is not None and result.examples is not None:
            compare(result, reference)
        elif result.problem is None:
            result.problem = "no reference examples to compare with"
        if name in wanted:
            results.append(result)
        print(f"[matrix] {name}: done in {result.seconds:.0f}s", flush=True)
    print(table(results, len(reference or {})))
    if ns.sessions is not None:
        base = ns.sessions / f"{REFERENCE}.json"
        others = [str(ns.sessions / f"{n}.json") for n in order[1:] if (ns.sessions / f"{n}.json").exists()]
        if base.exists() and others:
            print(f"What moving from {REFERENCE} changes: tfretrace compare {base} {' '.join(others)}")
    bad = [r for r in results if not r.green and not (r.row.optional and r.problem)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
