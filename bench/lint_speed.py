"""Speed of `tfretrace lint` on the installed Keras and TensorFlow sources, next to ast.parse and pyflakes.

Usage: python bench/lint_speed.py [PATH ...] [--limit N] [--repeat R]

Without paths it lints the installed keras and tensorflow packages, found with
importlib.util.find_spec (which locates them without importing TensorFlow). All three tools read
the same in-memory sources, so file I/O is excluded from every timing; each is timed R times and
the best run is reported.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tfretrace.lint.checker import lint_tree
from tfretrace.lint.findings import Skipped
from tfretrace.lint.runner import iter_files, lint_paths, parse, read_source


def default_roots() -> list[Path]:
    """The installed keras and tensorflow package folders (without importing them)."""
    roots = []
    for name in ("keras", "tensorflow"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(Path(p) for p in spec.submodule_search_locations)
    return roots


def load(roots: list[Path], limit: int | None) -> list[tuple[str, str]]:
    """(path, source) of every readable, parseable Python file under ``roots``."""
    sources = []
    for path in iter_files(roots, (), Path.cwd(), gitignore=False):
        source = read_source(path)
        if isinstance(source, Skipped) or isinstance(parse(source, str(path)), Skipped):
            continue
        sources.append((str(path), source))
        if limit is not None and len(sources) >= limit:
            break
    return sources


def best_time(work: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="at most N files")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool (best is kept)")
    args = parser.parse_args(argv)

    roots = args.paths or default_roots()
    if not roots:
        print("keras/tensorflow not installed: pass a path to a Python tree", file=sys.stderr)
        return 2
    sources = load(roots, args.limit)
    lines = sum(src.count("\n") + 1 for _, src in sources)
    findings: Counter[str] = Counter()

    def run_parse() -> None:
        for path, src in sources:
            ast.parse(src, filename=path)

    def run_lint() -> None:
        findings.clear()
        for path, src in sources:
            for finding in lint_tree(ast.parse(src, filename=path), src, path):
                findings[finding.code] += 1

    timings = {"ast.parse": best_time(run_parse, args.repeat)}
    timings["tfretrace lint"] = best_time(run_lint, args.repeat)
    try:
        from pyflakes import api, reporter
    except ImportError:
        print("pyflakes not installed: pip install pyflakes", file=sys.stderr)
    else:
        import io

        silent = reporter.Reporter(io.StringIO(), io.StringIO())

        def run_pyflakes() -> None:
            for path, src in sources:
                api.check(src, path, silent)

        timings["pyflakes"] = best_time(run_pyflakes, args.repeat)

    # The command as users run it: files read from disk, -j all cores, first with an empty cache
    # (cold), then again with the cache that run filled (warm).
    jobs = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="lint-cache-") as cache:
        files = [path for path, _ in sources]
        cold = best_time(lambda: lint_paths(files, jobs=jobs, cache_dir=Path(cache), gitignore=False), 1)
        warm = best_time(lambda: lint_paths(files, jobs=jobs, cache_dir=Path(cache), gitignore=False), args.repeat)
    timings[f"lint -j{jobs} cold"] = cold
    timings[f"lint -j{jobs} cached"] = warm

    print(f"roots: {', '.join(str(r) for r in roots)}")
    print(f"files: {len(sources)}   lines: {lines}   python {sys.version.split()[0]}")
    for tool, seconds in timings.items():
        print(f"{tool:>15}: {seconds:8.2f} s   {lines / seconds:12,.0f} lines/s")
    lint = timings["tfretrace lint"]
    print(f"tfretrace lint / ast.parse time: {lint / timings['ast.parse']:.2f}x")
    if "pyflakes" in timings:
        print(f"tfretrace lint / pyflakes time:  {lint / timings['pyflakes']:.2f}x")
    if "pyflakes" in timings:
        print(f"pyflakes / lint -j{jobs} cold time: {timings['pyflakes'] / cold:.2f}x (target >= 2)")
    print(f"lint cold / cached time:         {cold / warm:.2f}x (target >= 5)")
    print(f"findings: {sum(findings.values())}")
    for code, count in sorted(findings.items()):
        print(f"  {code}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
