"""The ``tfretrace lint`` command line: options, config merge, output and exit codes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfretrace import catalogue
from tfretrace.lint import config as config_mod
from tfretrace.lint.checker import ALL_CODES
from tfretrace.lint.formats import FORMATS, SUFFIXES, explain, statistics
from tfretrace.lint.runner import lint_paths

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
    return config_mod.LintConfig(
        select=_split(args.select) or base.select,
        ignore=base.ignore + _split(args.ignore),
        exclude=base.exclude + _split(args.exclude),
        max_file_size=base.max_file_size,
        source=base.source,
    )


def main(argv: list[str] | None = None) -> int:
    """Run ``tfretrace lint``; returns 0 when clean, 1 with findings, 2 on bad usage or input."""
    args = build_parser().parse_args(argv)
    if args.explain:
        try:
            entry = catalogue.get(args.explain)
        except KeyError:
            print(f"tfretrace lint: error: unknown code {args.explain!r}", file=sys.stderr)
            return EXIT_USAGE
        sys.stdout.write(explain(entry))
        return EXIT_CLEAN
    try:
        cfg = _load_config(args)
        codes = cfg.codes(ALL_CODES)
    except config_mod.ConfigError as exc:
        print(f"tfretrace lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"tfretrace lint: error: {missing[0]}: no such file or directory", file=sys.stderr)
        return EXIT_USAGE
    root = cfg.source.parent if cfg.source is not None else Path.cwd()
    report = lint_paths(args.paths, codes, cfg.exclude, cfg.max_file_size, root)
    fmt = args.format or SUFFIXES.get(Path(args.output).suffix, "text") if args.output else None
    text = FORMATS[fmt or args.format or "text"](report, codes)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"tfretrace lint: error: {args.output}: {exc.strerror}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.write(text)
    if args.statistics:
        out = sys.stderr if (fmt or args.format or "text") != "text" or args.output else sys.stdout
        for code, count in statistics(report):
            print(f"{count:6d}  {code}  {catalogue.get(code).slug}", file=out)
    if report.findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
