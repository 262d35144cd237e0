"""Output formats of a lint report: text, JSON, SARIF 2.1.0 and GitHub workflow annotations."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from tfretrace._util.text import encodable, plural, printable
from tfretrace._util.version import __version__
from tfretrace.lint.findings import CONFIRMED, Finding, Observed, Report, RetraceSite
from tfretrace.records import catalogue
from tfretrace.records.cause import Cause

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/tfretrace/tfretrace/blob/main/docs/lint.md"


def shown_path(path: str) -> str:
    """A path for people and JSON: undecodable bytes as ``\\xe9``, control characters escaped."""
    try:
        text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that does not stand for a byte
        text = encodable(path)
    return printable(text)


def uri(path: str) -> str:
    """A SARIF/RFC 3986 URI reference for a relative or absolute path: its bytes percent-encoded."""
    return urllib.parse.quote(os.fsencode(path), safe="/")


def artifact(path: str, root: str | None) -> dict[str, str]:
    """A SARIF artifactLocation: relative to %SRCROOT% when the file is under the root, however it
    was named on the command line (absolute, ``./x``, ``../x`` from a subfolder); else a file URI."""
    absolute = os.path.abspath(path)
    if root is not None:
        rel = os.path.relpath(absolute, root)
        if rel != ".." and not rel.startswith(".." + os.sep):
            return {"uri": uri(rel.replace(os.sep, "/")), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + uri(absolute.replace(os.sep, "/"))}


def _root_uri(root: str) -> str:
    return "file://" + uri(root.rstrip("/").replace(os.sep, "/") + "/")


def statistics(report: Report) -> list[tuple[str, int]]:
    """(code, count) pairs, most frequent first."""
    counts = Counter(f.code for f in report.findings)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _marks(finding: Finding) -> str:
    """`` [likely]`` and `` [confirmed: 7 retraces, 0.8 s]`` after a finding's message, when they apply."""
    marks = f" [{finding.confidence}]" if finding.confidence != CONFIRMED else ""
    if finding.observed is not None:
        marks += f" [{finding.observed.line()}]"
    return marks


def _observed_json(observed: Observed | None) -> dict[str, Any] | None:
    if observed is None:
        return None
    return {"retraces": observed.retraces, "seconds": observed.seconds, "functions": list(observed.functions)}


def _site_line(site: RetraceSite) -> str:
    n = site.retraces
    return (
        f"{shown_path(site.path)}:{site.line}: {printable(', '.join(site.functions))}: "
        f"{n} retrace{'s' if n != 1 else ''}, {site.seconds:.1f} s ({', '.join(site.causes)})"
    )


def render_text(report: Report, codes: Sequence[str], color: bool = False) -> str:
    """``path:line:col: CODE message`` lines (1-based column), skipped files, then a summary.

    ``color`` (a terminal's console): the same text, the location bold and the code red.
    """
    lines = [
        _colored(f"{shown_path(f.path)}:{f.where}:{f.column + 1}:", f.code, printable(f.message) + _marks(f), color)
        for f in report.findings
    ]
    lines += [
        f"{shown_path(s.path)}: {'error' if s.error else 'skipped'}: {printable(s.reason)}"
        for s in report.skipped
    ]
    n = len(report.findings)
    summary = f"Found {plural(n, 'finding')} in {plural(report.files, 'file')}"
    errors = sum(s.error for s in report.skipped)
    if errors:
        summary += f", {plural(errors, 'file')} with errors"
    if len(report.skipped) > errors:
        summary += f" ({len(report.skipped) - errors} skipped)"
    lines.append(summary + ".")
    if report.session is not None:
        confirmed = sum(f.observed is not None for f in report.findings)
        lines.append(
            f"Session {shown_path(report.session)}: {confirmed} of {n} findings retraced in the run; "
            f"{len(report.unpredicted)} retracing line{'s' if len(report.unpredicted) != 1 else ''} "
            "no rule predicted" + (":" if report.unpredicted else ".")
        )
        lines += ["  " + _site_line(site) for site in report.unpredicted]
        if report.session_note is not None:
            lines.append(f"  Note: {report.session_note}.")
    return "\n".join(lines) + "\n"


def _colored(where: str, code: str, message: str, color: bool) -> str:
    if not color:
        return f"{where} {code} {message}"
    from rich.style import Style  # only a terminal's run needs rich's styles

    return f"{Style(bold=True).render(where)} {Style(bold=True, color='red').render(code)} {message}"


def render_json(report: Report, codes: Sequence[str]) -> str:
    """A stable JSON document: findings with code, slug and cause, skipped files, counts."""
    doc = {
        "tool": "tfretrace-lint",
        "version": __version__,
        "findings": [
            {
                "path": shown_path(f.path),
                "line": f.line,
                "column": f.column + 1,
                "cell": f.cell,
                "code": f.code,
                "slug": catalogue.get(f.code).slug,
                "cause": catalogue.get(f.code).cause,
                "message": f.message,
                "confidence": f.confidence,
                "observed": _observed_json(f.observed),
            }
            for f in report.findings
        ],
        "skipped": [
            {"path": shown_path(s.path), "reason": s.reason, "error": s.error} for s in report.skipped
        ],
        "files": report.files,
        "lines": report.lines,
        "statistics": dict(statistics(report)),
        "session": None
        if report.session is None
        else {
            "path": shown_path(report.session),
            "confirmed": sum(f.observed is not None for f in report.findings),
            "unpredicted": [
                {**site.to_dict(), "path": shown_path(site.path)} for site in report.unpredicted
            ],
            # Why nothing could be marked (the session's files are not among those linted), else null.
            "note": report.session_note,
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def _sarif_rule(entry: Cause) -> dict[str, Any]:
    help_text = f"{entry.why}\n\nFix: {entry.fix}\n\nBad:\n{entry.bad}\n\nGood:\n{entry.good}"
    markdown = (
        f"{entry.why}\n\n**Fix:** {entry.fix}\n\nBad:\n```python\n{entry.bad}\n```\n\n"
        f"Good:\n```python\n{entry.good}\n```"
    )
    return {
        "id": entry.code,
        "name": entry.slug,
        "shortDescription": {"text": entry.title},
        "fullDescription": {"text": entry.why},
        "help": {"text": help_text, "markdown": markdown},
        "helpUri": f"{INFO_URI}#{entry.code.lower()}",
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["tensorflow", "performance"], "cause": entry.cause},
    }


def render_sarif(report: Report, codes: Sequence[str]) -> str:
    """SARIF 2.1.0 for code-scanning UIs; skipped files become tool notifications."""
    ids = sorted(set(codes) | {f.code for f in report.findings})
    index = {code: i for i, code in enumerate(ids)}
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact(f.path, report.root),
                        "region": {"startLine": f.line, "startColumn": f.column + 1},
                    }
                }
            ],
            "partialFingerprints": {"primaryLocationLineHash": f.fingerprint},
            # A notebook's line counts within the code cell named here (cells are not files).
            "properties": {
                "confidence": f.confidence,
                **({"cell": f.cell} if f.cell is not None else {}),
                **({"observed": _observed_json(f.observed)} if f.observed is not None else {}),
            },
        }
        for f in report.findings
    ]
    notes = [
        {
            "level": "error" if s.error else "warning",
            "message": {"text": f"{'error' if s.error else 'skipped'}: {s.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": artifact(s.path, report.root)}}],
        }
        for s in report.skipped
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tfretrace",
                        "version": __version__,
                        "informationUri": INFO_URI,
                        "rules": [_sarif_rule(catalogue.get(code)) for code in ids],
                    }
                },
                "invocations": [
                    {"executionSuccessful": True, "toolExecutionNotifications": notes}
                ],
                **({"originalUriBaseIds": {"%SRCROOT%": {"uri": _root_uri(report.root)}}} if report.root else {}),
                "results": results,
                **(
                    {"properties": {"unpredictedRetraces": [
                        {**site.to_dict(), "location": artifact(site.path, report.root)}
                        for site in report.unpredicted
                    ]}}
                    if report.session is not None
                    else {}
                ),
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report, codes: Sequence[str]) -> str:
    """GitHub Actions workflow commands (``::warning file=...``), one per finding."""
    lines = []
    for f in report.findings:
        slug = catalogue.get(f.code).slug
        props = (
            f"file={_escape_property(shown_path(f.path))},line={f.line},col={f.column + 1},"
            f"title={_escape_property(f'{f.code} {slug}' + (f' (cell {f.cell})' if f.cell else ''))}"
        )
        lines.append(f"::warning {props}::{_escape_data(printable(f.message + _marks(f)))}")
    for s in report.skipped:
        kind, word = ("error", "error") if s.error else ("notice", "skipped")
        text = _escape_data(printable(f"{word}: {s.reason}"))
        lines.append(f"::{kind} file={_escape_property(shown_path(s.path))}::{text}")
    return "".join(line + "\n" for line in lines)


FORMATS: dict[str, Callable[[Report, Sequence[str]], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}
# `--output report.sarif` picks its format from the suffix when --format is not given.
SUFFIXES: dict[str, str] = {".json": "json", ".sarif": "sarif", ".txt": "text"}
