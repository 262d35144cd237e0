"""Read the user's own source at a def and a call site: parameters, decorator, call expressions, batch() calls."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from tfretrace.fix.core.defs import callee_name, closes_over, find_def, is_tf_function, tf_alias_of
from tfretrace.fix.core.files import is_user_path as is_user_path  # with the files: the session's hashes
from tfretrace.fix.core.files import lines as source_lines
from tfretrace.fix.core.files import read_source_file
from tfretrace.fix.core.files import resolve as resolve  # need only these two, not this module


@dataclass(frozen=True)
class Span:
    """A range of one source file: 1-based lines, 0-based columns, as ``ast`` gives them."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class DefInfo:
    """The def a tf.function traces, as written by the user."""

    path: str
    name: str
    line: int
    params: tuple[str, ...]
    is_method: bool
    decorator: Span | None  # the tf.function decorator expression (without the @)
    decorator_text: str | None
    wrap_call: Span | None  # a ``tf.function(name)`` call elsewhere in the module
    wrap_text: str | None
    outer: str | None  # the enclosing def or class
    outer_kind: str | None  # "def" or "class"
    closes_over: tuple[str, ...]
    tf_alias: str | None  # the module's name for tensorflow; None when it imports none
    node: ast.FunctionDef | ast.AsyncFunctionDef | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CallInfo:
    """One call of the function at a call site: the expressions passed for each parameter."""

    path: str
    line: int
    span: Span
    args: tuple[tuple[str, str, Span], ...]  # (parameter, expression source, span of the expression)
    func_text: str
    # The elements of an argument written as a literal tuple, list or dict (string keys), one level
    # down, named by the path tfretrace records there (``data[1]``, ``hp['lr']``).
    parts: tuple[tuple[str, str, Span], ...] = ()

    def arg(self, parameter: str) -> tuple[str, str, Span] | None:
        """What this call passes for ``parameter`` (or for one element of a literal, ``data[1]``), or None."""
        return next((a for a in (*self.args, *self.parts) if a[0] == parameter), None)


@dataclass(frozen=True)
class BatchCall:
    """A ``.batch(...)`` call in the user's source."""

    span: Span
    text: str
    has_drop_remainder: bool
    size: int | None = None  # the batch size when it is written as a literal
    assigned_to: str | None = None  # the name a `name = <...>.batch(...)` statement binds


class SourceReader:
    """Parses user files once; paths are as recorded (relative to the run's working directory)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self._cache: dict[str, tuple[str, ast.Module] | None] = {}

    def resolve(self, path: str) -> Path:
        """The file on disk for a recorded path."""
        return resolve(path, self.root)

    def module(self, path: str) -> tuple[str, ast.Module] | None:
        """Source text and tree of a user file, or None when it is missing, foreign or unparsable."""
        if path in self._cache:
            return self._cache[path]
        found: tuple[str, ast.Module] | None = None
        if is_user_path(path):
            try:
                # Bytes decoded as Python does (a BOM, a coding cookie); FIFOs and devices refused.
                text = read_source_file(self.resolve(path)).text
                found = (text, ast.parse(text))
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                found = None
        self._cache[path] = found
        return found

    def tf_alias(self, path: str) -> str | None:
        """The file's name for the tensorflow module (``tf``), or None when it has none."""
        parsed = self.module(path)
        return None if parsed is None else tf_alias_of(parsed[1])

    def text(self, span: Span) -> str:
        """The source text of a span."""
        parsed = self.module(span.path)
        if parsed is None:
            return ""
        return _segment(parsed[0], span)

    def function_at(self, location: str, short: str) -> DefInfo | None:
        """The def whose first line (decorators included) is at ``location``."""
        path, line = split_location(location)
        parsed = self.module(path)
        if parsed is None:
            return None
        text, tree = parsed
        found = find_def(tree, line, short)
        if found is None:
            return None
        node, parents = found
        alias = tf_alias_of(tree)
        decorator = None
        for item in node.decorator_list:
            target = item.func if isinstance(item, ast.Call) else item
            if is_tf_function(target, alias):
                decorator = _span(path, item)
        wrap = None if decorator is not None else _find_wrap(tree, node.name, alias, path)
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        outer_node = parents[-1] if parents else None
        is_method = isinstance(outer_node, ast.ClassDef)
        if is_method and params and params[0] in ("self", "cls"):
            params = params[1:]
        outer_kind = None
        outer = None
        if isinstance(outer_node, ast.ClassDef):
            outer, outer_kind = outer_node.name, "class"
        elif isinstance(outer_node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer, outer_kind = outer_node.name, "def"
        closes = closes_over(node, outer_node) if outer_kind == "def" else ()
        return DefInfo(
            path=path,
            name=node.name,
            line=line,
            params=tuple(params),
            is_method=is_method,
            decorator=decorator,
            decorator_text=None if decorator is None else _segment(text, decorator),
            wrap_call=wrap,
            wrap_text=None if wrap is None else _segment(text, wrap),
            outer=outer,
            outer_kind=outer_kind,
            closes_over=closes,
            tf_alias=alias,
            node=node,
        )

    def call_at(self, site: str, names: tuple[str, ...], params: tuple[str, ...]) -> CallInfo | None:
        """The call of one of ``names`` at ``site``, its arguments mapped to ``params``."""
        found = self.calls_at(site, names, params)
        return found[0] if found else None

    def calls_at(self, site: str, names: tuple[str, ...], params: tuple[str, ...]) -> list[CallInfo]:
        """Every call of one of ``names`` that starts on ``site``'s line (``a = f(1); b = f(2)``), in order.

        Where none starts there, the innermost call spanning the line (a call written over several
        lines, recorded at one of its inner lines). A call whose arguments cannot be mapped to
        ``params`` (``*args``, ``**kwargs``) is left out.
        """
        path, line = split_location(site)
        parsed = self.module(path)
        if parsed is None:
            return []
        text, tree = parsed
        candidates = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
            and callee_name(node.func) in names
        ]
        starting = sorted((n for n in candidates if n.lineno == line), key=lambda n: n.col_offset)
        if not starting and candidates:
            starting = [min(candidates, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)]
        found = [_call_info(text, path, line, node, params) for node in starting]
        return [info for info in found if info is not None]

    def call_lines(self, path: str, names: tuple[str, ...]) -> list[int]:
        """Lines of every call of one of ``names`` in a user file (calls that never traced included)."""
        parsed = self.module(path)
        if parsed is None:
            return []
        found = {
            node.lineno
            for node in ast.walk(parsed[1])
            if isinstance(node, ast.Call) and callee_name(node.func) in names
        }
        return sorted(found)

    def batch_calls(self, path: str) -> list[BatchCall]:
        """Every ``<dataset>.batch(...)`` call in a user file."""
        parsed = self.module(path)
        if parsed is None:
            return []
        text, tree = parsed
        # Which dataset a batch() call builds: the name its statement assigns, when it is one name.
        bound: dict[int, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                for inner in ast.walk(node.value):
                    bound[id(inner)] = node.targets[0].id
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "batch":
                has = any(k.arg == "drop_remainder" for k in node.keywords) or len(node.args) >= 2
                size = node.args[0] if node.args else None
                literal = size.value if isinstance(size, ast.Constant) and isinstance(size.value, int) else None
                span = _span(path, node)
                found.append(BatchCall(span, _segment(text, span), has, literal, bound.get(id(node))))
        return sorted(found, key=lambda b: (b.span.line, b.span.col))

    def preview(self, edits: tuple[Replacement, ...] | list[Replacement]) -> str | None:
        """The user's lines as they read after the edits, each group headed by ``# file:line``."""
        by_path: dict[str, list[Replacement]] = {}
        for edit in edits:
            by_path.setdefault(edit.span.path, []).append(edit)
        blocks = []
        for path, edits_here in by_path.items():
            parsed = self.module(path)
            if parsed is None:
                return None
            lines = source_lines(parsed[0])
            offsets = [0]
            for line in lines:
                offsets.append(offsets[-1] + len(line.encode("utf-8")))
            for group in _nearby(edits_here):
                first = min(e.span.line for e in group)
                last = max(e.span.end_line for e in group)
                chunk = "".join(lines[first - 1 : last]).encode("utf-8")
                base = offsets[first - 1]
                for edit in sorted(group, key=lambda e: (e.span.line, e.span.col), reverse=True):
                    start = offsets[edit.span.line - 1] + edit.span.col - base
                    end = offsets[edit.span.end_line - 1] + edit.span.end_col - base
                    chunk = chunk[:start] + edit.text.encode("utf-8") + chunk[end:]
                text = chunk.decode("utf-8").rstrip("\n")
                indent = min((len(x) - len(x.lstrip()) for x in text.splitlines() if x.strip()), default=0)
                body = "\n".join(x[indent:] for x in text.splitlines())
                blocks.append(f"# {path}:{first}\n{body}")
        return "\n".join(blocks) if blocks else None

    def none_assignment(self, path: str, name: str, before: int) -> Span | None:
        """The ``None`` in the last ``name = None`` before line ``before`` (an initial state)."""
        parsed = self.module(path)
        if parsed is None:
            return None
        best: ast.Constant | None = None
        # Only the scope that makes the call: the innermost def around the call line, else the module.
        scope: ast.AST = parsed[1]
        for node in ast.walk(parsed[1]):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno <= before - 1 <= (node.end_lineno or node.lineno)
                and (scope is parsed[1] or node.lineno > getattr(scope, "lineno", 0))
            ):
                scope = node
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Assign)
                and node.lineno < before
                and isinstance(node.value, ast.Constant)
                and node.value.value is None
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and (best is None or node.lineno > best.lineno)
            ):
                best = node.value
        return None if best is None else _span(path, best)


def _call_info(text: str, path: str, line: int, node: ast.Call, params: tuple[str, ...]) -> CallInfo | None:
    args: list[tuple[str, str, Span]] = []
    parts: list[tuple[str, str, Span]] = []
    for number, arg in enumerate(node.args):
        if isinstance(arg, ast.Starred) or number >= len(params):
            return None
        args.append((params[number], _segment(text, _span(path, arg)), _span(path, arg)))
        parts.extend(_parts(text, path, params[number], arg))
    for keyword in node.keywords:
        if keyword.arg is None:
            return None
        args.append((keyword.arg, _segment(text, _span(path, keyword.value)), _span(path, keyword.value)))
        parts.extend(_parts(text, path, keyword.arg, keyword.value))
    return CallInfo(path, line, _span(path, node), tuple(args), _segment(text, _span(path, node.func)), tuple(parts))


def literal_elements(node: ast.expr) -> list[tuple[int | str, ast.expr]]:
    """The elements of a literal tuple or list (by index) or dict with string keys (by key); none otherwise."""
    if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return list(enumerate(node.elts))
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        found: list[tuple[int | str, ast.expr]] = [(k.value, v) for k, v in zip(node.keys, node.values, strict=True)
                 if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        # A key written twice: Python keeps the last value, and wrapping the first would change nothing.
        return found if len({key for key, _value in found}) == len(found) else []
    return []


def _parts(text: str, path: str, name: str, node: ast.expr) -> list[tuple[str, str, Span]]:
    # Named as the recorded signature names them (_tf.types: ``[0]``, ``['lr']``).
    return [(f"{name}[{key!r}]", _segment(text, _span(path, value)), _span(path, value))
            for key, value in literal_elements(node)]


# Edits further apart than this many lines are shown as separate groups: the lines between them are
# not the step's, and a preview of two call sites 20 lines apart would print all 20.
_GAP = 3


def _nearby(edits: list[Replacement]) -> list[list[Replacement]]:
    """One file's edits in groups of nearby lines, in line order."""
    groups: list[list[Replacement]] = []
    for edit in sorted(edits, key=lambda e: (e.span.line, e.span.col)):
        if groups and edit.span.line <= max(e.span.end_line for e in groups[-1]) + _GAP:
            groups[-1].append(edit)
        else:
            groups.append([edit])
    return groups


def split_location(location: str) -> tuple[str, int]:
    """``("train.py", 41)`` from ``"train.py:41"``."""
    path, _, line = location.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def _span(path: str, node: ast.expr | ast.stmt) -> Span:
    return Span(path, node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)


def _segment(text: str, span: Span) -> str:
    lines = source_lines(text)
    if span.line > len(lines):
        return ""
    if span.line == span.end_line:
        return _cut(lines[span.line - 1], span.col, span.end_col)
    parts = [_cut(lines[span.line - 1], span.col, None)]
    parts.extend(lines[span.line : span.end_line - 1])
    parts.append(_cut(lines[span.end_line - 1], 0, span.end_col))
    return "".join(parts)


def _cut(line: str, start: int, end: int | None) -> str:
    # ast columns are UTF-8 byte offsets.
    data = line.encode("utf-8")
    return data[start:end].decode("utf-8", errors="replace")


def _find_wrap(tree: ast.Module, name: str, alias: str | None, path: str) -> Span | None:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and is_tf_function(node.func, alias)
            and node.args
            and isinstance(node.args[0], (ast.Name, ast.Attribute))
            and callee_name(node.args[0]) == name
        ):
            return _span(path, node)
    return None


@dataclass(frozen=True)
class Replacement:
    """Replace a span of user source with new text (an empty span inserts)."""

    span: Span
    text: str
