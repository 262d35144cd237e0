"""Lint one module's source: parse, run the selected rules, drop ``# noqa`` lines, word messages."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from tfretrace import catalogue
from tfretrace.lint import trace_rules  # noqa: F401  (registers the trace-time rules)
from tfretrace.lint._context import Check, Walker
from tfretrace.lint._module import ModuleInfo
from tfretrace.lint.findings import Finding
from tfretrace.lint.rules import CHECKS, CODES

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_SENTENCE_END = re.compile(r"(?<=[a-z0-9')])\.(?:\s|$)")

ALL_CODES: tuple[str, ...] = tuple(sorted(CODES))


def first_sentence(text: str) -> str:
    """The first sentence of a catalogue text, which the catalogue keeps self-contained."""
    match = _SENTENCE_END.search(text)
    return text[: match.end()].strip() if match else text


def message_for(code: str, detail: str) -> str:
    """One-line message: what was found, why it matters and the fix."""
    entry = catalogue.get(code)
    return f"{detail}. {first_sentence(entry.why)} Fix: {first_sentence(entry.fix)}"


def noqa_lines(source: str) -> dict[int, frozenset[str] | None]:
    """Line -> codes suppressed on it (None: a bare ``# noqa`` suppresses everything)."""
    result: dict[int, frozenset[str] | None] = {}
    if "noqa" not in source and "NOQA" not in source:
        return result
    for number, text in enumerate(source.splitlines(), start=1):
        if "#" not in text:
            continue
        match = _NOQA.search(text)
        if match is None:
            continue
        codes = match.group("codes")
        result[number] = (
            None if codes is None else frozenset(c.upper() for c in re.split(r"[\s,]+", codes))
        )
    return result


def _select_checks(codes: Iterable[str]) -> dict[type[ast.AST], list[tuple[str, Check]]]:
    wanted = set(codes)
    selected: dict[type[ast.AST], list[tuple[str, Check]]] = {}
    for node_type, checks in CHECKS.items():
        kept = [(code, check) for code, check in checks if code in wanted]
        if kept:
            selected[node_type] = kept
    return selected


def lint_tree(
    tree: ast.Module, source: str, path: str, codes: Iterable[str] = ALL_CODES
) -> list[Finding]:
    """Findings of the rules in ``codes`` on a parsed module, with ``# noqa`` applied."""
    found: dict[tuple[int, int, str], Finding] = {}

    def emit(code: str, node: ast.AST, detail: str) -> None:
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0)
        key = (line, column, code)
        if key not in found:
            found[key] = Finding(path, line, column, code, message_for(code, detail))

    Walker(_select_checks(codes), emit).run(tree, ModuleInfo(tree))
    noqa = noqa_lines(source)
    kept = []
    for finding in found.values():
        suppressed = noqa.get(finding.line, frozenset())
        if suppressed is None or finding.code in suppressed:
            continue
        kept.append(finding)
    kept.sort(key=lambda f: (f.line, f.column, f.code))
    return kept


def lint_source(source: str, path: str = "<string>", codes: Iterable[str] = ALL_CODES) -> list[Finding]:
    """Parse and lint one module's text. Raises SyntaxError for invalid code."""
    return lint_tree(ast.parse(source, filename=path), source, path, codes)
