"""Linter configuration: ``[tool.tfretrace]`` in pyproject.toml, and rule selection by code."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from tfretrace._util.config import TABLES as COMMAND_TABLES
from tfretrace.records import catalogue

# Directories never worth linting: environments, VCS data, caches and build output.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".venv", "venv", ".git", ".hg", "__pycache__", "build", "dist", "node_modules",
    "site-packages", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".eggs",
)  # fmt: skip
MAX_FILE_SIZE = 5 * 1024 * 1024


class ConfigError(ValueError):
    """Bad configuration or rule selection; the CLI prints it on one line and exits 2."""


@dataclass(frozen=True)
class LintConfig:
    """The settings of one run, after pyproject.toml and command-line options are merged."""

    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_file_size: int = MAX_FILE_SIZE
    respect_gitignore: bool = True
    source: Path | None = field(default=None, compare=False)

    def codes(self, known: Sequence[str]) -> tuple[str, ...]:
        """The rule codes this configuration turns on, in code order."""
        chosen = set(expand(self.select, known))
        chosen -= set(expand(self.ignore, known))
        return tuple(sorted(chosen))


def expand(selectors: Iterable[str], known: Sequence[str]) -> list[str]:
    """Codes named by selectors: ``ALL``, a code, a code prefix (``TFR10``) or a rule slug."""
    out: list[str] = []
    for raw in selectors:
        sel = raw.strip()
        if not sel:  # an empty string would otherwise select nothing, silently
            raise ConfigError("empty rule selector '' (name a code, prefix, slug or ALL)")
        if sel.upper() == "ALL":
            out.extend(known)
            continue
        matches = [c for c in known if c.startswith(sel.upper())]
        if not matches:
            try:
                entry = catalogue.get(sel)
            except KeyError:
                entry = None
            if entry is not None and entry.code in known:
                matches = [entry.code]
        if not matches:
            raise ConfigError(f"unknown lint rule {sel!r} (see `tfretrace explain` for the codes)")
        out.extend(matches)
    return out


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.tfretrace]`` table."""
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _table(candidate):
            return candidate
    return None


def _table(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read TOML: {exc}") from exc
    tool = data.get("tool", {})
    table = tool.get("tfretrace", {}) if isinstance(tool, dict) else {}
    return table if isinstance(table, dict) else {}


def _strings(table: dict[str, Any], key: str, path: Path) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [tool.tfretrace] {key} must be a list of strings")
    return tuple(value)


# Every key the linter reads; besides the other commands' tables, anything else is a typo.
KEYS = ("select", "ignore", "exclude", "extend-exclude", "max-file-size", "respect-gitignore")


def _refuse_unknown(table: dict[str, Any], path: Path, where: str) -> None:
    for key in table:
        if key not in KEYS:
            raise ConfigError(f"{path}: {where} has an unknown key {key!r} (known: {', '.join(KEYS)})")


def load(path: Path | None) -> LintConfig:
    """Read ``[tool.tfretrace]`` (and ``[tool.tfretrace.lint]``, which wins) from ``path``.

    An unknown key is a ConfigError naming it: a misspelt ``ignore`` would otherwise do nothing.
    """
    if path is None:
        return LintConfig()
    table = dict(_table(path))
    lint = table.pop("lint", None)
    for other in COMMAND_TABLES:  # the other commands' settings (tfretrace._util.config reads them)
        table.pop(other, None)
    _refuse_unknown(table, path, "[tool.tfretrace]")
    if lint is not None:
        if not isinstance(lint, dict):
            raise ConfigError(f"{path}: [tool.tfretrace] lint must be a table")
        _refuse_unknown(lint, path, "[tool.tfretrace.lint]")
        table.update(lint)
    select = _strings(table, "select", path)
    if select is not None and not select:
        raise ConfigError(
            f"{path}: [tool.tfretrace] select = [] selects no rule "
            "(leave it out to run every rule; turn rules off with ignore)"
        )
    size = table.get("max-file-size", MAX_FILE_SIZE)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ConfigError(f"{path}: [tool.tfretrace] max-file-size must be a positive integer")
    return LintConfig(
        select=select or ("ALL",),
        ignore=_strings(table, "ignore", path) or (),
        exclude=(_strings(table, "exclude", path) or ())
        + (_strings(table, "extend-exclude", path) or ()),
        max_file_size=size,
        respect_gitignore=_flag(table, "respect-gitignore", path),
        source=path,
    )


def _flag(table: dict[str, Any], key: str, path: Path) -> bool:
    value = table.get(key, True)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: [tool.tfretrace] {key} must be true or false")
    return value
