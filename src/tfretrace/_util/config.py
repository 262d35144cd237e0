"""Project settings for ``run``, ``fix`` and the pytest plugin: ``[tool.tfretrace.<command>]`` in pyproject.toml.

The linter keeps its own keys (``tfretrace.lint.config``); this module owns the other commands'
tables. A key nobody reads is an error naming it: a misspelt setting must not silently do nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Each command's table and its keys. ``prevent`` (the profile `run --prevent` applies) and
# ``baseline`` (the file `run --baseline` compares with) are paths relative to the pyproject.toml.
TABLES: dict[str, tuple[str, ...]] = {
    "run": ("output-dir", "keep-tf-warning", "fix-plan", "max-traces", "prevent", "baseline"),
    "fix": ("root",),
    "pytest": ("max-traces", "summary", "xla"),
}


class ProjectConfigError(ValueError):
    """A setting of the wrong type, or an unknown key: one line naming the file and the key."""


@dataclass(frozen=True)
class RunSettings:
    """``[tool.tfretrace.run]``: defaults for ``tfretrace run`` (command-line options win)."""

    output_dir: Path | None = None  # relative --save / -o paths are written into it
    keep_tf_warning: bool = False
    fix_plan: bool = False
    max_traces: int | None = None  # like TFRETRACE_STRICT=N: a budget for every function
    prevent: Path | None = None  # the profile of `run --prevent`
    baseline: Path | None = None  # the file of `run --baseline`


@dataclass(frozen=True)
class FixSettings:
    """``[tool.tfretrace.fix]``: defaults for ``tfretrace fix``."""

    root: Path | None = None


@dataclass(frozen=True)
class PytestSettings:
    """``[tool.tfretrace.pytest]``: defaults for the plugin's options."""

    max_traces: int | None = None
    summary: bool = False
    xla: bool = False


@dataclass(frozen=True)
class ProjectConfig:
    """Every command's settings, and the file they came from (None: defaults)."""

    run: RunSettings = RunSettings()
    fix: FixSettings = FixSettings()
    pytest: PytestSettings = PytestSettings()
    source: Path | None = None


def find(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` with a ``[tool.tfretrace]`` table."""
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _tool_table(candidate) is not None:
            return candidate
    return None


def load(path: Path | None) -> ProjectConfig:
    """The settings in ``path`` (None: all defaults); raise ProjectConfigError on a bad one."""
    if path is None:
        return ProjectConfig()
    tool = _tool_table(path) or {}
    tables = {}
    for name, keys in TABLES.items():
        table = tool.get(name, {})
        if not isinstance(table, dict):
            raise ProjectConfigError(f"{path}: [tool.tfretrace] {name} must be a table")
        for key in table:
            if key not in keys:
                raise ProjectConfigError(
                    f"{path}: [tool.tfretrace.{name}] has an unknown key {key!r} (known: {', '.join(keys)})"
                )
        tables[name] = _Table(path, name, table)
    run, fix, pytest = tables["run"], tables["fix"], tables["pytest"]
    return ProjectConfig(
        run=RunSettings(
            output_dir=run.folder("output-dir"),
            keep_tf_warning=run.flag("keep-tf-warning"),
            fix_plan=run.flag("fix-plan"),
            max_traces=run.count("max-traces"),
            prevent=run.folder("prevent"),
            baseline=run.folder("baseline"),
        ),
        fix=FixSettings(root=fix.folder("root")),
        pytest=PytestSettings(
            max_traces=pytest.count("max-traces"), summary=pytest.flag("summary"), xla=pytest.flag("xla"),
        ),
        source=path,
    )


def _tool_table(path: Path) -> dict[str, Any] | None:
    # The TOML reader loads where a pyproject.toml is found: a run outside a project never needs it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectConfigError(f"{path}: cannot read TOML: {str(exc).splitlines()[0]}") from None
    tool = data.get("tool")
    table = tool.get("tfretrace") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


@dataclass(frozen=True)
class _Table:
    path: Path
    name: str
    values: dict[str, Any]

    def _bad(self, key: str, wanted: str) -> ProjectConfigError:
        return ProjectConfigError(f"{self.path}: [tool.tfretrace.{self.name}] {key} must be {wanted}")

    def flag(self, key: str) -> bool:
        value = self.values.get(key, False)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def count(self, key: str) -> int | None:
        value = self.values.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise self._bad(key, "a whole number, 0 or more")
        return value

    def text(self, key: str) -> str | None:
        value = self.values.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise self._bad(key, "a non-empty string")
        return value

    def folder(self, key: str) -> Path | None:
        """A path, relative to the pyproject.toml's folder."""
        value = self.text(key)
        return None if value is None else self.path.parent / value
