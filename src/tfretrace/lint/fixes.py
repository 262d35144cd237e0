"""`tfretrace lint --fix`: the mechanical fixes of lint findings, as edits for tfretrace fix's rewriter.

A fix is a list of ``fix.core.source.Replacement`` spans, applied by ``fix.applying.rewrite.apply_replacements``
(libcst, comments and layout kept) and written by ``fix.applying.apply.write_all`` (atomic, all files or
none): the same code path as ``tfretrace fix``. Safe fixes keep the program's behaviour (a renamed
keyword); unsafe ones change what the code does at run time (a tensor argument instead of a Python
number, ``tf.print`` on every call instead of ``print`` once per trace) and need ``--unsafe-fixes``.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from tfretrace.fix.core.source import Replacement, Span
from tfretrace.lint._names import Imports
from tfretrace.lint.checker import lint_tree
from tfretrace.lint.findings import Finding
from tfretrace.lint.formats import shown_path
from tfretrace.lint.notebook import NotebookError, NotebookSource, read_notebook, with_new_lines
from tfretrace.lint.runner import decode, parse, read_bytes

if TYPE_CHECKING:  # fix.applying.apply pulls in the session model: imported only when files are fixed
    from tfretrace.fix.applying.apply import FileChange

# The codes with a fix, and whether it is safe (behaviour kept) or unsafe (behaviour changed).
SAFE: frozenset[str] = frozenset({"TFR115"})
UNSAFE: frozenset[str] = frozenset({"TFR106", "TFR107", "TFR108", "TFR109", "TFR110", "TFR116"})
FIXABLE: frozenset[str] = SAFE | UNSAFE

# Clocks that return seconds as a float, as tf.timestamp() does (time_ns and datetime do not).
_SECONDS_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic"})
# Python and NumPy draws of one float -> the tf.random op drawing one per call, and how many
# positional arguments (bounds, or mean and deviation) carry over in the same order.
_RANDOM = {
    "random.random": ("uniform", 0),
    "random.uniform": ("uniform", 2),
    "random.gauss": ("normal", 2),
    "random.normalvariate": ("normal", 2),
    "numpy.random.rand": ("uniform", 0),
    "numpy.random.random": ("uniform", 0),
    "numpy.random.random_sample": ("uniform", 0),
    "numpy.random.uniform": ("uniform", 2),
    "numpy.random.randn": ("normal", 0),
    "numpy.random.normal": ("normal", 2),
    "numpy.random.standard_normal": ("normal", 0),
}
# print() keywords tf.print has no counterpart for.
_PRINT_ONLY_KEYWORDS = frozenset({"file", "flush"})


@dataclass(frozen=True)
class _Module:
    path: str
    source: str
    tree: ast.Module
    tf: str | None  # the module-level name of tensorflow, or None when the file imports none

    @cached_property
    def imports(self) -> Imports:
        """The module's import aliases (what a called name resolves to)."""
        return Imports(self.tree)


@dataclass
class FilePlan:
    """One file's fixes: the edits to make, and the findings they fix or that need --unsafe-fixes."""

    path: str
    source: str
    edits: list[Replacement] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    unsafe_skipped: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # findings per code, fixed or not


def tf_alias(tree: ast.Module) -> str | None:
    """The name a module-level ``import tensorflow [as tf]`` binds (``tf`` first), or None."""
    names: list[str] = []
    for stmt in tree.body:
        for node in ast.walk(stmt) if isinstance(stmt, (ast.Try, ast.If)) else (stmt,):
            if isinstance(node, ast.Import):
                names.extend(a.asname or a.name for a in node.names if a.name == "tensorflow")
    return "tf" if "tf" in names else (names[0] if names else None)


def _span(path: str, node: ast.AST) -> Span:
    return Span(path, node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _relax_shapes(node: ast.AST, mod: _Module) -> list[Replacement]:
    # experimental_relax_shapes=X -> reduce_retracing=X: TensorFlow's own alias, the same behaviour.
    if not isinstance(node, ast.Call) or any(k.arg == "reduce_retracing" for k in node.keywords):
        return []
    for kw in node.keywords:
        if kw.arg == "experimental_relax_shapes":
            name = Span(mod.path, kw.lineno, kw.col_offset, kw.lineno, kw.col_offset + len(kw.arg))
            return [Replacement(name, "reduce_retracing")]
    return []


def _print(node: ast.AST, mod: _Module) -> list[Replacement]:
    # print(...) -> tf.print(...): prints on every call (to stderr) instead of once per trace.
    if mod.tf is None or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return []
    if any(k.arg in _PRINT_ONLY_KEYWORDS for k in node.keywords):
        return []
    return [Replacement(_span(mod.path, node.func), f"{mod.tf}.print")]


def _clock(node: ast.AST, mod: _Module) -> list[Replacement]:
    # time.time() -> tf.timestamp(): read on every call, as a float64 tensor of seconds.
    if mod.tf is None or not isinstance(node, ast.Call) or node.args or node.keywords:
        return []
    if mod.imports.resolve(node.func) not in _SECONDS_CLOCKS:
        return []
    return [Replacement(_span(mod.path, node), f"{mod.tf}.timestamp()")]


def _random(node: ast.AST, mod: _Module) -> list[Replacement]:
    # random.random() -> tf.random.uniform([]): a new float32 tensor per call, not one frozen draw.
    if mod.tf is None or not isinstance(node, ast.Call) or node.keywords:
        return []
    name = mod.imports.resolve(node.func)
    op, most = _RANDOM.get(name or "", ("", -1))
    if not op or len(node.args) > most or any(isinstance(a, ast.Starred) for a in node.args):
        return []
    if name in ("random.uniform", "random.gauss", "random.normalvariate") and len(node.args) != 2:
        return []  # those take exactly two arguments: anything else is not the call we know
    args = [ast.get_source_segment(mod.source, a) for a in node.args]
    if any(a is None for a in args):
        return []
    text = ", ".join(["[]", *(a for a in args if a is not None)])
    return [Replacement(_span(mod.path, node), f"{mod.tf}.random.{op}({text})")]


def _predict(node: ast.AST, mod: _Module) -> list[Replacement]:
    # model.predict(x) -> model(x, training=False).numpy(): the same NumPy result with no predict
    # function traced at all, the fix `tfretrace fix` makes (keras-call). predict_on_batch is not
    # it: it still traces predict_function once per new batch size (measured: 2 traces for 5).
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return []
    if len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
        return []
    if any(k.arg != "verbose" for k in node.keywords):
        return []  # batch_size, steps, callbacks: a plain call has none of them
    receiver = ast.get_source_segment(mod.source, node.func.value)
    data = ast.get_source_segment(mod.source, node.args[0])
    if receiver is None or data is None:
        return []
    return [Replacement(_span(mod.path, node), f"{receiver}({data}, training=False).numpy()")]


def _constant(node: ast.AST, mod: _Module) -> list[Replacement]:
    # A Python number argument -> tf.constant(number): one graph input instead of one trace per value.
    if mod.tf is None or not isinstance(node, ast.expr) or isinstance(node, ast.Starred):
        return []
    text = ast.get_source_segment(mod.source, node)
    if text is None:
        return []
    return [Replacement(_span(mod.path, node), f"{mod.tf}.constant({text})")]


_FIXERS: dict[str, Callable[[ast.AST, _Module], list[Replacement]]] = {
    "TFR115": _relax_shapes,
    "TFR107": _predict,
    "TFR108": _print,
    "TFR109": _random,
    "TFR110": _clock,
    "TFR106": _constant,
    "TFR116": _constant,
}


def _overlaps(a: Span, b: Span) -> bool:
    return (a.line, a.col) < (b.end_line, b.end_col) and (b.line, b.col) < (a.end_line, a.end_col)


def plan_file(source: str, path: str, codes: Sequence[str], *, unsafe: bool) -> FilePlan | None:
    """The fixes for one module's findings (noqa'd ones excluded), or None when it does not parse."""
    tree = parse(source, path)
    if not isinstance(tree, ast.Module):
        return None
    nodes: dict[Finding, ast.AST] = {}
    findings = lint_tree(tree, source, path, codes, nodes=nodes)
    mod = _Module(path, source, tree, tf_alias(tree))
    plan = FilePlan(path, source, counts=Counter(f.code for f in findings))
    for finding in findings:
        fixer = _FIXERS.get(finding.code)
        if fixer is None:
            continue
        edits = fixer(nodes[finding], mod)
        if not edits:
            continue
        if finding.code in UNSAFE and not unsafe:
            plan.unsafe_skipped += 1
            continue
        # Two fixes at one place (print(step(i))) would fight: the first is made, the rest wait a run.
        if any(_overlaps(e.span, k.span) for e in edits for k in plan.edits):
            continue
        plan.edits.extend(edits)
        plan.fixed.append(finding)
    return plan


@dataclass(frozen=True)
class _Read:
    data: bytes
    text: str  # the file's decoded text (a notebook's JSON)
    notebook: NotebookSource | None

    @property
    def source(self) -> str:
        """The Python that is linted: the text, or a notebook's code cells as one module."""
        return self.notebook.text if self.notebook is not None else self.text


def _read(path: str, max_size: int) -> _Read | None:
    """A file as the lint run read it, or None when the run reports it as skipped or an error."""
    data = read_bytes(Path(path), max_size)
    text = decode(data, path) if isinstance(data, bytes) else data
    if not isinstance(text, str) or not isinstance(data, bytes):
        return None
    try:
        return _Read(data, text, read_notebook(text) if path.endswith(".ipynb") else None)
    except NotebookError:
        return None


def fixable(paths: Sequence[str], codes: Sequence[str], max_size: int) -> tuple[int, int]:
    """(findings --fix would fix, more that --unsafe-fixes would): planned only, nothing rewritten."""
    safe = unsafe = 0
    for path in paths:
        read = _read(path, max_size)
        plan = plan_file(read.source, path, codes, unsafe=False) if read is not None else None
        if plan is not None:
            safe += len(plan.fixed)
            unsafe += plan.unsafe_skipped
    return safe, unsafe


@dataclass
class FixResult:
    """What --fix or --diff would change: the new text per file, counts, and files it could not fix."""

    changes: list[FileChange] = field(default_factory=list)
    fixed: int = 0
    unsafe_skipped: int = 0
    failed: list[str] = field(default_factory=list)  # one line per file left unchanged, and why


def fix_files(paths: Sequence[str], codes: Sequence[str], max_size: int, *, unsafe: bool) -> FixResult:
    """The fixed text of every file in ``paths`` that has fixable findings; nothing is written here.

    Each new text is linted again: a fix that would leave a file unparsable, or leave its own
    finding in place, is not made (the rewriter refuses an edit that does not match one node).
    A notebook's code cells are fixed as the one module they are linted as, and each changed line
    is written back into its cell.
    """
    from tfretrace.fix.applying.apply import FileChange
    from tfretrace.fix.applying.rewrite import RewriteError, apply_replacements

    result = FixResult()
    if not FIXABLE.intersection(codes):
        return result
    for path in paths:
        read = _read(path, max_size)
        if read is None:
            continue
        text, notebook, source = read.text, read.notebook, read.source
        if read.data != text.encode("utf-8"):  # a BOM or another encoding: writing UTF-8 back would change it
            result.failed.append(f"{path}: not plain UTF-8; not fixed")
            continue
        plan = plan_file(source, path, codes, unsafe=unsafe)
        if plan is None:
            continue
        result.unsafe_skipped += plan.unsafe_skipped
        if not plan.edits:
            continue
        try:
            fixed = apply_replacements(source, plan.edits, where=path)
            after = with_new_lines(text, notebook, fixed) if notebook is not None else fixed
        except RewriteError as exc:
            result.failed.append(str(exc))
            continue
        except NotebookError as exc:
            result.failed.append(f"{path}: {exc}; not fixed")
            continue
        # Linted again: every fixed finding gone, and no new one of any code.
        again = plan_file(fixed, path, codes, unsafe=True)
        expected = plan.counts - Counter(f.code for f in plan.fixed)
        if again is None or any(n > expected[code] for code, n in again.counts.items()):
            result.failed.append(f"{path}: the fixed text would still have the findings it fixes; left unchanged")
            continue
        # Through a symbolic link the file it points to is rewritten; the link stays a link. The
        # name in diff headers is escaped like every shown path, newlines and tabs too (they would
        # break the diff's header lines).
        header = shown_path(path).replace("\n", "\\n").replace("\t", "\\t")
        result.changes.append(FileChange(header, Path(path).resolve(), text, after))
        result.fixed += len(plan.fixed)
    return result


def write_fixes(result: FixResult) -> None:
    """Write every fixed file atomically, or none: FixError when one changed since it was read."""
    from tfretrace.fix.applying.apply import FixError, write_all

    for change in result.changes:
        try:
            now = change.disk.read_bytes()
        except OSError as exc:
            raise FixError(f"{change.path}: cannot read again ({exc.strerror}); nothing was changed") from None
        if now != change.before.encode("utf-8"):
            raise FixError(f"{change.path}: changed while it was being fixed; nothing was changed")
    write_all(result.changes)


def summary(result: FixResult, *, written: bool) -> str:
    """One line for stderr: how many findings were (or would be) fixed, and how many need --unsafe-fixes."""
    verb = "Fixed" if written else "Would fix"
    files = len(result.changes)
    line = f"{verb} {result.fixed} finding{'s' * (result.fixed != 1)} in {files} file{'s' * (files != 1)}"
    if result.unsafe_skipped:
        line += f"; {result.unsafe_skipped} more with --unsafe-fixes"
    return line + "."
