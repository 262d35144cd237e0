"""The saved result of one monitored run: summary, JSON schema 1, save/load and merging of workers."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfretrace.events import FunctionReport

SCHEMA = 1
TOOL = "tfretrace"


class SessionFormatError(ValueError):
    """A file that is not a tfretrace session this version can read."""


@dataclass(frozen=True)
class SummaryRow:
    """One line of the ranked summary table."""

    name: str
    location: str
    calls: int
    traces: int
    retraces: int
    trace_seconds: float
    share_of_wall: float
    main_cause: str | None
    worker: str | None


@dataclass(frozen=True)
class Session:
    """Everything one process (or several merged workers) recorded, ready to render or save."""

    functions: tuple[FunctionReport, ...]
    wall_seconds: float
    tool_version: str = ""
    tensorflow: str | None = None
    keras: str | None = None
    python: str | None = None
    label: str | None = None
    argv: tuple[str, ...] = ()
    started_at: float = 0.0
    internal_errors: int = 0
    internal_error_messages: tuple[str, ...] = ()
    workers: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def total_traces(self) -> int:
        """All traces of all functions."""
        return sum(f.traces for f in self.functions)

    @property
    def total_retraces(self) -> int:
        """Traces beyond each function's first (and its expected variable-creation trace)."""
        return sum(f.retraces for f in self.functions)

    def function(self, name: str) -> FunctionReport:
        """The function whose qualified or display name is ``name``, or ends with ``.name``."""
        for report in self.functions:
            if name in (report.name, report.display_name()):
                return report
        for report in self.functions:
            if report.name.endswith("." + name):
                return report
        raise KeyError(name)

    def summary(self) -> list[SummaryRow]:
        """Per function: calls, traces, trace seconds and share of wall time, costliest first."""
        wall = self.wall_seconds if self.wall_seconds > 0 else 0.0
        rows = [
            SummaryRow(
                name=f.display_name(),
                location=f.location,
                calls=f.calls,
                traces=f.traces,
                retraces=f.retraces,
                trace_seconds=f.trace_seconds,
                share_of_wall=(f.trace_seconds / wall) if wall else 0.0,
                main_cause=f.main_cause,
                worker=f.worker,
            )
            for f in self.functions
        ]
        rows.sort(key=lambda r: (-r.trace_seconds, -r.traces, r.name))
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The public JSON form (schema 1, documented in the README)."""
        return {
            "schema": SCHEMA,
            "tool": {"name": TOOL, "version": self.tool_version},
            "tensorflow": self.tensorflow,
            "keras": self.keras,
            "python": self.python,
            "label": self.label,
            "argv": list(self.argv),
            "started_at": self.started_at,
            "wall_seconds": round(self.wall_seconds, 6),
            "internal_errors": self.internal_errors,
            "internal_error_messages": list(self.internal_error_messages),
            "workers": list(self.workers),
            "notes": list(self.notes),
            "functions": [f.to_dict() for f in self.functions],
        }

    def to_json(self) -> str:
        """The JSON text, indented for people and diffs."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON atomically: a crash never leaves a half-written file behind."""
        target = Path(path)
        text = self.to_json()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def from_dict(cls, data: Any, source: str = "<data>") -> Session:
        """Build a session from its JSON form; raise SessionFormatError on anything foreign."""
        if not isinstance(data, dict) or "schema" not in data or "functions" not in data:
            raise SessionFormatError(f"{source}: not a tfretrace session (no 'schema'/'functions')")
        tool = data.get("tool")
        if not isinstance(tool, dict) or tool.get("name") != TOOL:
            raise SessionFormatError(f"{source}: not a tfretrace session (tool is {tool!r})")
        if data["schema"] != SCHEMA:
            raise SessionFormatError(
                f"{source}: session schema {data['schema']!r} is not supported "
                f"(this tfretrace reads schema {SCHEMA})"
            )
        try:
            functions = tuple(FunctionReport.from_dict(f) for f in data["functions"])
            return cls(
                functions=functions,
                wall_seconds=float(data.get("wall_seconds", 0.0)),
                tool_version=str(tool.get("version", "")),
                tensorflow=data.get("tensorflow"),
                keras=data.get("keras"),
                python=data.get("python"),
                label=data.get("label"),
                argv=tuple(data.get("argv", [])),
                started_at=float(data.get("started_at", 0.0)),
                internal_errors=int(data.get("internal_errors", 0)),
                internal_error_messages=tuple(data.get("internal_error_messages", [])),
                workers=tuple(data.get("workers", [])),
                notes=tuple(data.get("notes", [])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SessionFormatError(f"{source}: malformed tfretrace session ({exc!r})") from None


def load(path: str | os.PathLike[str]) -> Session:
    """Read a session saved by :meth:`Session.save`; one-line SessionFormatError on bad input."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SessionFormatError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionFormatError(f"{source}: cannot read ({exc.__class__.__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionFormatError(f"{source}: not JSON (line {exc.lineno}: {exc.msg})") from None
    return Session.from_dict(data, source)


def merge(sessions: list[Session]) -> Session:
    """Merge sessions of several processes or workers into one, each function labelled."""
    if len(sessions) == 1:
        return sessions[0]
    functions: list[FunctionReport] = []
    labels: list[str] = []
    for number, session in enumerate(sessions):
        label = session.label or f"worker{number}"
        while label in labels:
            label = f"{label}#{number}"
        labels.append(label)
        functions.extend(replace(f, worker=label) for f in session.functions)
    first = sessions[0]
    return Session(
        functions=tuple(functions),
        wall_seconds=max(s.wall_seconds for s in sessions),
        tool_version=first.tool_version,
        tensorflow=first.tensorflow,
        keras=first.keras,
        python=first.python,
        label="merged",
        argv=first.argv,
        started_at=min(s.started_at for s in sessions),
        internal_errors=sum(s.internal_errors for s in sessions),
        internal_error_messages=tuple(m for s in sessions for m in s.internal_error_messages),
        workers=tuple(labels),
        notes=tuple(n for s in sessions for n in s.notes) + divergence_notes(functions, labels),
    )


def divergence_notes(functions: list[FunctionReport], labels: list[str]) -> tuple[str, ...]:
    """Name functions whose trace counts differ between workers (a hang risk in collectives)."""
    by_name: dict[str, dict[str, int]] = {}
    for report in functions:
        by_name.setdefault(report.name, {})[report.worker or "?"] = report.traces
    notes = []
    for name, counts in sorted(by_name.items()):
        full = {label: counts.get(label, 0) for label in labels}
        if len(set(full.values())) > 1:
            detail = ", ".join(f"{label}: {n}" for label, n in full.items())
            notes.append(f"traces diverge across workers for {name} ({detail})")
    return tuple(notes)
