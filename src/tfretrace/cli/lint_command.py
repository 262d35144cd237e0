"""The ``tfretrace lint`` command line: options, config merge, output and exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tfretrace._util.gitignore import repository
from tfretrace._util.io import atomic_write_text
from tfretrace._util.text import printable
from tfretrace.cli.output import UsageError, checked_output
from tfretrace.lint import config as config_mod
from tfretrace.lint.checker import ALL_CODES
from tfretrace.lint.findings import Report
from tfretrace.lint.formats import FORMATS, SUFFIXES, render_text, shown_path, statistics
from tfretrace.lint.runner import lint_paths
from tfretrace.records import catalogue
from tfretrace.render._console import colored, console_for
from tfretrace.render.explain import WIDTH, explanation

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors on one line with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"tfretrace lint: error: {message}\n")


def _split(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v.strip() for value in values or () for v in value.split(",") if v.strip())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = _Parser(
        prog="tfretrace lint",
        description="Find tf.function retracing bugs and trace-time traps in Python source.",
    )
    parser.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    parser.add_argument("--format", choices=sorted(FORMATS), help="output format (default: text)")
    parser.add_argument("-o", "--output", help="write the report to FILE instead of stdout")
    parser.add_argument("--select", action="append", help="codes, prefixes or slugs to enable")
    parser.add_argument("--ignore", action="append", help="codes, prefixes or slugs to disable")
    parser.add_argument("--exclude", action="append", help="glob patterns of paths to skip")
    parser.add_argument("--config", help="pyproject.toml to read (default: nearest one)")
    parser.add_argument("--no-config", action="store_true", help="ignore pyproject.toml")
    parser.add_argument("--statistics", action="store_true", help="print counts per code")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    parser.add_argument("--explain", metavar="CODE", help="explain a rule and exit")
    parser.add_argument(
        "-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
        help="lint in N processes (default: all cores)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the findings cache")
    parser.add_argument(
        "--cache-dir", metavar="DIR", help="findings cache folder (default: .tfretrace_cache at the root)"
    )
    parser.add_argument("--no-gitignore", action="store_true", help="also lint files .gitignore excludes")
    parser.add_argument("--fix", action="store_true", help="apply the safe fixes, then report what is left")
    parser.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; write nothing (exit 1 if any)"
    )
    parser.add_argument(
        "--session", metavar="FILE",
        help="a saved tfretrace session: mark the findings it saw retrace, list retraces no rule predicted",
    )
    parser.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix/--diff, also make fixes that change behaviour"
    )
    return parser


def _load_config(args: argparse.Namespace) -> config_mod.LintConfig:
    if args.no_config:
        base = config_mod.LintConfig()
    elif args.config:
        path = Path(args.config)
        if not path.is_file():
            raise config_mod.ConfigError(f"{path}: no such config file")
        base = config_mod.load(path)
    else:
        base = config_mod.load(config_mod.find_pyproject(Path.cwd()))
    if args.select is not None and not _split(args.select):
        raise config_mod.ConfigError("--select needs at least one code, prefix, slug or ALL")
    return config_mod.LintConfig(
        select=_split(args.select) or base.select,
        ignore=base.ignore + _split(args.ignore),
        exclude=base.exclude + _split(args.exclude),
        max_file_size=base.max_file_size,
        respect_gitignore=base.respect_gitignore and not args.no_gitignore,
        source=base.source,
    )


def _fix(args: argparse.Namespace, report: Report, codes: tuple[str, ...], max_size: int) -> int | None:
    """--diff: print the diff and give the exit code; --fix: write the files (None on failure)."""
    from tfretrace.fix.applying.apply import FixError, unified_diff
    from tfretrace.lint.fixes import FIXABLE, fix_files, summary, write_fixes

    paths = sorted({f.path for f in report.findings if f.code in FIXABLE})
    result = fix_files(paths, codes, max_size, unsafe=args.unsafe_fixes)
    for line in result.failed:
        print(f"tfretrace lint: {shown_path(line)}", file=sys.stderr)
    if args.diff:
        sys.stdout.write(unified_diff(result.changes))
        print(summary(result, written=False), file=sys.stderr)
        return EXIT_FINDINGS if result.changes and not args.exit_zero else EXIT_CLEAN
    try:
        write_fixes(result)
    except FixError as exc:
        print(f"tfretrace lint: error: {exc}", file=sys.stderr)
        return None
    print(summary(result, written=True), file=sys.stderr)
    return EXIT_CLEAN


def _fix_hint(report: Report, codes: tuple[str, ...], max_size: int) -> None:
    """After a text report: how many of its findings --fix (or --unsafe-fixes) would fix."""
    from tfretrace.lint.fixes import FIXABLE, fixable

    paths = sorted({f.path for f in report.findings if f.code in FIXABLE})
    safe, unsafe = fixable(paths, codes, max_size) if paths else (0, 0)
    if safe or unsafe:
        more = f" ({unsafe} more with --unsafe-fixes)" if safe and unsafe else ""
        print(f"[*] {safe} fixable with --fix{more}" if safe else f"[*] {unsafe} fixable with --fix --unsafe-fixes")


def main(argv: list[str] | None = None) -> int:
    """Run ``tfretrace lint``; returns 0 when clean, 1 with findings, 2 on bad usage or input."""
    args = build_parser().parse_args(argv)
    if args.explain:
        try:
            entry = catalogue.get(args.explain)
        except KeyError:
            print(f"tfretrace lint: error: unknown code {args.explain!r}", file=sys.stderr)
            return EXIT_USAGE
        console = console_for(sys.stdout)
        console.file.write(explanation(entry, width=min(console.width, WIDTH), color=colored(console)) + "\n")
        return EXIT_CLEAN
    try:
        cfg = _load_config(args)
        codes = cfg.codes(ALL_CODES)
    except config_mod.ConfigError as exc:
        print(f"tfretrace lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"tfretrace lint: error: {shown_path(missing[0])}: no such file or directory",
              file=sys.stderr)
        return EXIT_USAGE
    if args.output:
        try:  # never a Python file or notebook, nor a file named to be linted
            checked_output(args.output, "--output", check_format=False, reads=args.paths)
        except UsageError as exc:
            print(f"tfretrace lint: error: {printable(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
    if args.jobs < 1:
        print("tfretrace lint: error: --jobs must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    session = None
    if args.session:
        from tfretrace.records.session import SessionFormatError, load

        try:
            session = load(args.session)
        except SessionFormatError as exc:
            print(f"tfretrace lint: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    # %SRCROOT% and the cache live at the config's folder, else the repository's top, else here.
    here = Path.cwd().resolve()
    root = cfg.source.parent.resolve() if cfg.source is not None else (repository(here) or here)
    cache = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else root / ".tfretrace_cache"
    def run() -> Report:
        return lint_paths(
            args.paths, codes, cfg.exclude, cfg.max_file_size, root,
            jobs=args.jobs, cache_dir=cache, gitignore=cfg.respect_gitignore,
        )

    report = run()
    if args.fix or args.diff:
        fixed = _fix(args, report, codes, cfg.max_file_size)
        if fixed is None or args.diff:
            return EXIT_USAGE if fixed is None else fixed
        report = run()  # the fixed files linted again: what is left is reported
    if session is not None:
        from tfretrace.lint.observed import mark

        report.unpredicted = mark(report, session, args.paths)
        report.session = args.session
    fmt = args.format or SUFFIXES.get(Path(args.output).suffix, "text") if args.output else None
    text = FORMATS[fmt or args.format or "text"](report, codes)
    if not args.output and (fmt or args.format or "text") == "text" and colored(console_for(sys.stdout)):
        text = render_text(report, codes, color=True)  # the same lines, styled for the terminal
    if args.output:
        try:
            atomic_write_text(args.output, text)
        except OSError as exc:
            print(f"tfretrace lint: error: {args.output}: {exc.strerror}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.write(text)
        if (fmt or args.format or "text") == "text" and not args.fix:
            _fix_hint(report, codes, cfg.max_file_size)
    if args.statistics:
        out = sys.stderr if (fmt or args.format or "text") != "text" or args.output else sys.stdout
        for code, count in statistics(report):
            print(f"{count:6d}  {code}  {catalogue.get(code).slug}", file=out)
    # A file Python cannot parse or decode fails the run as a finding does (ruff does the same).
    if (report.findings or any(s.error for s in report.skipped)) and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
