"""Lint one module's source: parse, run the selected rules, drop ``# noqa`` lines, word messages."""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from collections.abc import Iterable

from tfretrace.lint import keras_rules, trace_rules  # noqa: F401  (register their rules)
from tfretrace.lint._context import Check, Walker
from tfretrace.lint._module import ModuleInfo
from tfretrace.lint.findings import CONFIRMED, Finding
from tfretrace.lint.rules import CHECKS, CODES
from tfretrace.records import catalogue

_NOQA = re.compile(r"#\s*noqa\b(?P<colon>:(?P<rest>.*))?", re.I)
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_LIST_END = re.compile(r"\s[-\u2013\u2014:;]\s|\s\(")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9')])\.(?:\s|$)")
# Python's tokenizer ends a line at \r\n, \r or \n only; str.splitlines() also splits at form
# feeds, U+2028 and others, which would shift every later line number by one.
_NEWLINE = re.compile(r"\r\n|\r|\n")

# TFR100 is the checker's own: a noqa comment naming a code that does not exist.
NOQA_CODE = "TFR100"
ALL_CODES: tuple[str, ...] = tuple(sorted({*CODES, NOQA_CODE}))


class _At(ast.AST):
    """Where a noqa finding points: the comment's line (its column is not worth a token walk)."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.lineno = line
        self.col_offset = 0


def first_sentence(text: str) -> str:
    """The first sentence of a catalogue text, which the catalogue keeps self-contained."""
    match = _SENTENCE_END.search(text)
    return text[: match.end()].strip() if match else text


def message_for(code: str, detail: str) -> str:
    """One-line message: what was found, why it matters and the fix."""
    entry = catalogue.get(code)
    return f"{detail}. {first_sentence(entry.why)} Fix: {first_sentence(entry.fix)}"


def python_lines(source: str) -> list[str]:
    """The source's lines as Python numbers them (line 1 is index 0)."""
    return _NEWLINE.split(source)


def char_column(line: str, byte_offset: int) -> int:
    """The character offset of ``ast``'s UTF-8 byte offset ``byte_offset`` in ``line``."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))


def noqa_lines(source: str) -> dict[int, frozenset[str] | None]:
    """Line -> codes suppressed on it (None: a bare ``# noqa`` suppresses everything)."""
    return {line: codes for line, (codes, _unknown) in parse_noqa(source).items()}


def parse_noqa(source: str) -> dict[int, tuple[frozenset[str] | None, tuple[str, ...]]]:
    """Line -> (codes suppressed, unknown tfretrace codes or slugs named) for each ``# noqa``.

    ``# noqa: TFR108, print-in-tf-function`` takes codes and slugs, separated by commas or spaces,
    up to the next ``#``. Codes of other tools (``E501``) are theirs: they suppress nothing here and
    are not reported. A TFR code or a slug-like word tfretrace does not know is reported (TFR100),
    never taken for a bare ``# noqa``.
    """
    result: dict[int, tuple[frozenset[str] | None, tuple[str, ...]]] = {}
    if "noqa" not in source.lower():
        return result
    for number, text in _comments(source):
        match = _NOQA.search(text)
        if match is None:
            continue
        if match.group("colon") is None:
            result[number] = (None, ())
            continue
        codes: set[str] = set()
        unknown: list[str] = []
        # The list ends at the next comment or at a dash or colon between spaces (ruff style:
        # `
        listed = _LIST_END.split(match.group("rest").split("#", 1)[0], maxsplit=1)[0]
        for word in _WORDS.findall(listed):
            code = _code_of(word)
            if code is not None:
                codes.add(code)
            elif re.fullmatch(r"TFR\d+", word, re.I) or _near_slug(word):
                unknown.append(word)
        result[number] = (frozenset(codes), tuple(unknown))
    return result


def _comments(source: str) -> Iterable[tuple[int, str]]:
    """(line, text) of each comment: a ``# noqa`` inside a string literal is no comment."""
    # newline=None reads \r and \r\n as line ends, as Python's tokenizer numbers lines.
    try:
        return [(tok.start[0], tok.string)
                for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        # A module that does not tokenize: every line with a '#', as before.
        return [(n, text) for n, text in enumerate(python_lines(source), start=1) if "#" in text]


def _near_slug(word: str) -> bool:
    """A misspelt slug of ours (``print-in-tf-fucntion``), not another tool's word."""
    slugs = [e.slug for e in catalogue.entries("lint")]
    return "-" in word and bool(difflib.get_close_matches(word.lower(), slugs, n=1, cutoff=0.8))


def _code_of(word: str) -> str | None:
    try:
        entry = catalogue.get(word)
    except KeyError:
        return None
    return entry.code if entry.kind == "lint" else None


def _select_checks(codes: Iterable[str]) -> dict[type[ast.AST], list[tuple[str, Check]]]:
    wanted = set(codes)
    selected: dict[type[ast.AST], list[tuple[str, Check]]] = {}
    for node_type, checks in CHECKS.items():
        kept = [(code, check) for code, check in checks if code in wanted]
        if kept:
            selected[node_type] = kept
    return selected


def lint_tree(
    tree: ast.Module,
    source: str,
    path: str,
    codes: Iterable[str] = ALL_CODES,
    *,
    nodes: dict[Finding, ast.AST] | None = None,
) -> list[Finding]:
    """Findings of the rules in ``codes`` on a parsed module, with ``# noqa`` applied.

    ``nodes``, when given, receives the node each kept finding points at (what ``--fix`` edits).
    """
    found: dict[tuple[int, int, str], Finding] = {}
    at: dict[tuple[int, int, str], ast.AST] = {}
    lines: list[str] = []

    def emit(code: str, node: ast.AST, detail: str, confidence: str = CONFIRMED) -> None:
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0)
        key = (line, column, code)
        if key not in found:
            if not lines:
                lines.extend(python_lines(source))
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            found[key] = Finding(
                path, line, char_column(text, column), code, message_for(code, detail), confidence=confidence
            )
            at[key] = node

    wanted = set(codes)
    Walker(_select_checks(wanted), emit).run(tree, ModuleInfo(tree))
    noqa = parse_noqa(source)
    if NOQA_CODE in wanted:
        for line, (_codes, unknown) in noqa.items():
            for word in unknown:
                emit(NOQA_CODE, _At(line), f"unknown code or slug {word!r} in a noqa comment")
    kept = []
    for key, finding in found.items():
        suppressed = noqa.get(finding.line, (frozenset(), ()))[0]
        if suppressed is None or finding.code in suppressed:
            continue
        kept.append(finding)
        if nodes is not None:
            nodes[finding] = at[key]
    kept.sort(key=lambda f: (f.line, f.column, f.code))
    return kept


def lint_source(source: str, path: str = "<string>", codes: Iterable[str] = ALL_CODES) -> list[Finding]:
    """Parse and lint one module's text. Raises SyntaxError for invalid code."""
    return lint_tree(ast.parse(source, filename=path), source, path, codes)
