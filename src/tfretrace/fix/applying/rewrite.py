"""Apply a plan's source edits through libcst's concrete syntax tree, so comments and layout survive."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from tfretrace.fix.core.files import lines as source_lines
from tfretrace.fix.core.source import Replacement

# An edit's text is a decorator, a TensorSpec list or a wrapped argument: a few hundred characters.
# Bounded before any parser sees it: libcst's native parser crashes the process (SIGSEGV) on a few
# kilobytes of nested parentheses and takes seconds per kilobyte of a long operator chain.
MAX_EDIT_CHARS = 4000
MAX_EDIT_NESTING = 20


class RewriteError(ValueError):
    """An edit whose anchor is not exactly one node of the file as it is now: refused, never guessed."""


# Whole statements (a def moved to module level) are the file's own lines, compared with what the
# file itself gives before any parser sees them (fix.core.anchor_moves): bounded like a def, not a decorator.
MAX_LINES_CHARS = 200_000


def check_text(text: str, where: str, *, lines: bool = False) -> None:
    """RewriteError when an edit's text is too long or nested too deeply to hand to a parser.

    ``lines``: the text adds whole statements (an insertion ending in a newline).
    """
    limit = MAX_LINES_CHARS if lines else MAX_EDIT_CHARS
    if len(text) > limit:
        raise RewriteError(f"{where}: the new text is {len(text)} characters long (at most {limit})")
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    if deepest > MAX_EDIT_NESTING:
        raise RewriteError(f"{where}: the new text nests {deepest} brackets deep (at most {MAX_EDIT_NESTING})")


def adds_lines(edit: Replacement) -> bool:
    """An insertion of whole statements: an empty span and a text ending in a newline."""
    span = edit.span
    return (span.line, span.col) == (span.end_line, span.end_col) and edit.text.endswith("\n")


def apply_replacements(text: str, edits: Sequence[Replacement], *, where: str = "<source>") -> str:
    """The source with every edit applied, or RewriteError when any edit cannot be made exactly.

    A replacement must cover exactly one expression of the concrete syntax tree (a decorator, a
    call argument, a ``tf.function(...)`` call), or, with an empty text, exactly one statement (a
    def, with its decorators, or a one-statement line) that it removes; an insertion (an empty
    span) must sit just before the closing parenthesis of a call and add keyword arguments to it,
    or, with a text of whole lines, at the start of a statement (its decorators included) and add
    those statements before it, in the same block. Everything else in the file,
    comments and formatting included, comes back byte for byte.
    """
    if not edits:
        return text
    for edit in edits:
        check_text(edit.text, f"{where}:{edit.span.line}", lines=adds_lines(edit))
    lines = source_lines(text)
    wanted = {_code_range(lines, e, where): e for e in edits}
    if len(wanted) != len(edits):
        raise RewriteError(f"{where}: two edits at the same place")
    _refuse_overlaps(list(wanted), where)
    try:
        wrapper = MetadataWrapper(cst.parse_module(text))
        positions = wrapper.resolve(PositionProvider)
        targets: dict[cst.CSTNode, tuple[str, Replacement]] = {}
        for where_range, edit in wanted.items():
            if _empty(where_range) and edit.text.endswith("\n"):
                targets[_statement_at(wrapper.module, positions, where_range, edit, where)] = ("lines", edit)
                continue
            how = "insert" if _empty(where_range) else "replace"
            targets[_find(positions, where_range, edit, where)] = (how, edit)
        new_text = wrapper.module.visit(_Rewriter(targets, where, wrapper.module.body)).code
        ast.parse(new_text)
    except cst.ParserSyntaxError as exc:
        raise RewriteError(f"{where}: cannot parse the file: {exc.message}") from None
    except SyntaxError as exc:  # a replacement text that is not valid Python where it lands
        raise RewriteError(f"{where}:{exc.lineno}: the edited file would not parse: {exc.msg}") from None
    except (RecursionError, MemoryError):
        # A valid file nested deeper than libcst's recursive visitors go: left as it is.
        raise RewriteError(f"{where}: nested too deeply to rewrite safely; edit it by hand") from None
    return new_text


def _code_range(lines: list[str], edit: Replacement, where: str) -> CodeRange:
    # Spans come from `ast`, whose columns count UTF-8 bytes; libcst counts characters.
    span = edit.span
    if not (1 <= span.line <= span.end_line <= len(lines) + 1):
        raise RewriteError(f"{where}:{span.line}: the edit points outside the file")

    def column(line: int, col: int) -> int:
        raw = lines[line - 1].encode("utf-8") if line <= len(lines) else b""
        if col > len(raw):
            raise RewriteError(f"{where}:{line}: the edit points past the end of the line")
        return len(raw[:col].decode("utf-8", errors="replace"))

    start = cst.metadata.CodePosition(span.line, column(span.line, span.col))
    end = cst.metadata.CodePosition(span.end_line, column(span.end_line, span.end_col))
    return CodeRange(start, end)


def _empty(code_range: CodeRange) -> bool:
    return code_range.start == code_range.end


def _refuse_overlaps(ranges: list[CodeRange], where: str) -> None:
    ordered = sorted(ranges, key=lambda r: (r.start.line, r.start.column, r.end.line, r.end.column))
    for before, after in itertools.pairwise(ordered):
        if (after.start.line, after.start.column) < (before.end.line, before.end.column):
            raise RewriteError(f"{where}:{after.start.line}: two edits overlap")


def _find(positions: object, code_range: CodeRange, edit: Replacement, where: str) -> cst.CSTNode:
    found: list[cst.CSTNode] = []
    for node, node_range in positions.items():  # type: ignore[attr-defined]
        if _empty(code_range):
            # An insertion lands in the call whose closing parenthesis follows it.
            if isinstance(node, cst.Call) and _before_close(node_range, code_range):
                found.append(node)
        elif node_range == code_range and isinstance(node, cst.BaseExpression if edit.text else _REMOVABLE):
            # A text replaces an expression; no text removes a whole statement.
            found.append(node)
    if not found:
        raise RewriteError(f"{where}:{edit.span.line}: the code at the edit is not what the session recorded")
    # Nested nodes can share one range (a name and its parenthesised form): the outermost comes first.
    return found[0]


# Statements an empty replacement may remove: a def (decorators included) or a one-statement line.
_REMOVABLE = (cst.FunctionDef, cst.SimpleStatementLine)


def _statement_at(
    module: cst.Module, positions: object, code_range: CodeRange, edit: Replacement, where: str
) -> cst.CSTNode:
    """The statement whose start (its decorators included) is the insertion point."""
    for node, node_range in positions.items():  # type: ignore[attr-defined]
        if not isinstance(node, cst.BaseStatement):
            continue
        start = node_range.start
        for decorator in getattr(node, "decorators", ()):
            start = min(start, positions[decorator].start, key=lambda p: (p.line, p.column))  # type: ignore[index]
        if (start.line, start.column) == (code_range.start.line, code_range.start.column):
            return node
    raise RewriteError(f"{where}:{edit.span.line}: new lines go only before a statement")


def _before_close(call_range: CodeRange, point: CodeRange) -> bool:
    return call_range.end.line == point.start.line and call_range.end.column == point.start.column + 1


class _Rewriter(cst.CSTTransformer):
    def __init__(
        self, targets: dict[cst.CSTNode, tuple[str, Replacement]], where: str, body: Sequence[cst.CSTNode] = ()
    ) -> None:
        super().__init__()
        self._module_body = tuple(body)
        self._targets = targets
        self._where = where

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        if isinstance(original_node, cst.IndentedBlock) and isinstance(updated_node, cst.IndentedBlock):
            return _first_without_blank_lines(original_node, updated_node, self._targets)
        target = self._targets.get(original_node)
        if target is None:
            return updated_node
        how, edit = target
        try:
            if how == "replace" and not edit.text:
                return cst.RemovalSentinel.REMOVE  # type: ignore[return-value]
            if how == "replace":
                return cst.parse_expression(edit.text)
            if how == "lines":
                top = any(original_node is s for s in self._module_body)
                return _with_lines_before(updated_node, edit.text, top)  # type: ignore[return-value]
            return _append_arguments(updated_node, edit.text)
        except cst.ParserSyntaxError:
            raise RewriteError(f"{self._where}:{edit.span.line}: the new text is not a Python expression") from None


def _first_without_blank_lines(
    original: cst.IndentedBlock, updated: cst.IndentedBlock, targets: dict[cst.CSTNode, tuple[str, Replacement]]
) -> cst.IndentedBlock:
    """The block whose first statement was removed: the blank lines that separated it go with it.

    Left there, they would open the body with an empty line (a def moved out of its outer def).
    Comment lines stay.
    """
    first = original.body[0] if original.body else None
    target = targets.get(first) if first is not None else None
    removed = target is not None and target[0] == "replace" and not target[1].text
    if not removed or not updated.body:
        return updated
    head = updated.body[0]
    lead = list(getattr(head, "leading_lines", ()))
    while lead and lead[0].comment is None:
        lead.pop(0)
    return updated.with_changes(body=[head.with_changes(leading_lines=lead), *updated.body[1:]])


def _with_lines_before(node: cst.CSTNode, text: str, top: bool) -> cst.FlattenSentinel[cst.BaseStatement]:
    # The new statements take the blank lines (and comments) that stood before the statement; at
    # module level two blank lines then separate them from it, as between module-level defs.
    added = list(cst.parse_module(text).body)
    if not added or not isinstance(node, cst.BaseStatement):
        raise RewriteError("new lines must be statements, added before a statement")
    lead = getattr(node, "leading_lines", ())
    added[0] = added[0].with_changes(leading_lines=lead)
    # Inside a function, a def or class keeps one blank line before it (a def moved in before it).
    between = [cst.EmptyLine(indent=False)] if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else []
    moved = node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()] if top else between)
    return cst.FlattenSentinel([*added, moved])


def _append_arguments(node: cst.CSTNode, text: str) -> cst.CSTNode:
    if not isinstance(node, cst.Call):
        raise RewriteError("an insertion must add arguments to a call")
    added = text.strip()
    if added.startswith(","):
        added = added[1:].strip()
    parsed = cst.parse_expression(f"_({added})")
    # "), x(" would close the call early: the parsed text must be this one call with keywords only.
    if not isinstance(parsed, cst.Call) or not all(a.keyword is not None for a in parsed.args):
        raise RewriteError("an insertion must add keyword arguments to a call")
    args = list(node.args)
    if args:
        # The last argument keeps its own trailing comma if it had one; otherwise libcst adds ", ".
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new_args = [*args, *(a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in parsed.args)]
    return node.with_changes(args=new_args)
