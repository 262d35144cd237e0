"""The hoists several kinds share: a tf.function def moved to module level, a statement made once before its loop."""

from __future__ import annotations

import ast
from collections.abc import Callable

from tfretrace.fix.core.defs import root_name
from tfretrace.fix.core.files import lines as source_lines
from tfretrace.fix.core.scopes import (
    binds_besides,
    bound_at_module,
    declares,
    def_chain,
    evaluated_where_defined,
    free_names,
    module_names,
    multiline_string,
    read_outside,
    scope_names,
)
from tfretrace.fix.core.source import DefInfo, Replacement, SourceReader, Span


def hoist_edits(
    definition: DefInfo | None, reader: SourceReader, decorator: str | None = None
) -> tuple[Replacement, Replacement] | None:
    """The def removed from its outer function and written before that function, at module level.

    Only where moving it changes nothing but how often the tf.function is made: the def closes
    over no name of the outer function (it sees module names and its own parameters), declares
    no ``global``/``nonlocal``, the outer function is itself at module level, and no module-level
    name is the def's. ``decorator``: the tf.function decorator's new text (a later step's).
    """
    found = _movable(definition, reader)
    if found is None or definition is None:
        return None
    text, tree, node = found
    top = next((s for s in tree.body if s.lineno <= node.lineno <= (s.end_lineno or s.lineno)), None)
    if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) or top.name != definition.outer:
        return None
    if bound_at_module(tree, node.name):
        return None
    removed, moved = _lifted(definition, node, text, decorator)
    start = min([top.lineno] + [d.lineno for d in top.decorator_list])
    return Replacement(removed, ""), Replacement(Span(definition.path, start, 0, start, 0), moved)


def outer_edits(
    definition: DefInfo | None, reader: SourceReader, decorator: str | None = None
) -> tuple[Replacement, Replacement] | None:
    """The def removed from its outer function and written in the function around that one, just before it.

    ``def main(): model = ...; def evaluate(): @tf.function def step(x): ...model...`` -> ``step`` defined in
    ``main``, before ``def evaluate``. Only where moving it changes nothing but how often the tf.function
    is made: the def reads no name its outer function binds (its free names are the enclosing
    function's, or the module's: the same cells after the move), declares no ``global``/``nonlocal``, its
    name is bound in the outer function by the def alone and nowhere in the function it moves to, and the
    outer def is a statement of that function's own body, not of a loop or a branch of it (the def runs once
    per call of that function), the function it moves to reads its name nowhere else (a module-level
    ``score`` it meant), it reads at least one name of the function it moves to (so that the cells the run's
    objects shared show one call of it made them all), its decorators and defaults read only module names
    (they are evaluated where the def stands), and no string in it spans lines (dedenting would change it).
    ``decorator``: the tf.function decorator's new text.
    """
    found = _movable(definition, reader)
    if found is None or definition is None:
        return None
    text, tree, node = found
    chain = def_chain(tree, node)
    if chain is None or len(chain) < 2:
        return None
    grand, middle = chain[-2], chain[-1]
    reads = free_names(node) - scope_names(node)
    if reads & (scope_names(middle) - {node.name}):
        return None  # it reads a name the outer function binds (a def, an import, a loop variable)
    if binds_besides(middle, node) or node.name in scope_names(grand) or declares(middle, node.name):
        return None
    if middle not in grand.body or read_outside(grand, middle, node.name) or not reads & scope_names(grand):
        return None
    # Written dedented: the rewriter adds the statements before the outer def at its own indentation.
    removed, moved = _lifted(definition, node, text, decorator)
    start = min([middle.lineno] + [d.lineno for d in middle.decorator_list])
    at = Span(definition.path, start, middle.col_offset, start, middle.col_offset)
    return Replacement(removed, ""), Replacement(at, moved)


def _movable(
    definition: DefInfo | None, reader: SourceReader
) -> tuple[str, ast.Module, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The file's text, its tree and the def, where a hoist of either kind may move it: nested in a def, closing
    over none of its names, declaring no ``global``/``nonlocal``, no string spanning lines (dedenting would change
    it), decorators and defaults reading only module names (they are evaluated where the def stands)."""
    if definition is None or definition.outer_kind != "def" or definition.closes_over or definition.node is None:
        return None
    parsed = reader.module(definition.path)
    if parsed is None:
        return None
    text, tree = parsed
    node = definition.node
    if any(isinstance(sub, (ast.Global, ast.Nonlocal)) for sub in ast.walk(node)) or multiline_string(node):
        return None
    if evaluated_where_defined(node) - module_names(tree):
        return None
    return text, tree, node


def _lifted(
    definition: DefInfo, node: ast.FunctionDef | ast.AsyncFunctionDef, text: str, decorator: str | None
) -> tuple[Span, str]:
    """The def's span, to remove, and its text dedented to column 0 (its decorator replaced by ``decorator``)."""
    lines = source_lines(text)  # numbered as ast numbers them
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    block = lines[first - 1 : node.end_lineno]
    moved = "".join(line[node.col_offset :] if line.strip() else line.lstrip(" \t") for line in block)
    if decorator is not None and definition.decorator_text:
        moved = moved.replace(definition.decorator_text, decorator, 1)
    if not moved.endswith("\n"):
        moved += "\n"
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return Span(definition.path, node.lineno, node.col_offset, *end), moved


def def_moved(
    definition: DefInfo | None, reader: SourceReader, decorator: str | None = None
) -> tuple[Replacement, Replacement] | None:
    """The def as a hoist moves it: to module level (hoist_edits), else into the function around its outer one."""
    return hoist_edits(definition, reader, decorator) or outer_edits(definition, reader, decorator)


def pipeline_edits(reader: SourceReader, site: str) -> tuple[Replacement, Replacement] | None:
    """A ``name = tf.<...>`` statement at ``site`` moved from inside its loop to just before the loop.

    A tf.data pipeline, or a ``tf.function(f)`` object. Only where the value is the same on every
    pass: one name bound, every call in the value a
    TensorFlow call or a method of the chain, no name the value reads bound or mutated (a method
    called on it) in the loop, and the bound name not rebound in the loop. A tf.data.Dataset can
    be iterated again on every pass; its ``shuffle`` reshuffles each time by default.
    """
    path, _, line_text = site.rpartition(":")
    parsed = reader.module(path)
    if parsed is None or not line_text.isdigit():
        return None
    text, tree = parsed
    line = int(line_text)
    alias = reader.tf_alias(path)
    found = _loop_statement(tree, line)
    if found is None or alias is None:
        return None
    loop, statement = found
    target = statement.targets[0]
    assert isinstance(target, ast.Name)
    calls = [n for n in ast.walk(statement.value) if isinstance(n, ast.Call)]
    if not calls or any(root_name(c.func) != alias and not _chained(c, statement.value) for c in calls):
        return None
    reads = {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
    bound = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    mutated = {
        root_name(n.func) for n in ast.walk(loop)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n not in calls
    }
    stores = [n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    rebound = stores.count(target.id)
    if reads & (bound | mutated) - {alias} or rebound != 1:
        return None
    return _move_before(path, text, loop, statement)


def wrap_moved(
    reader: SourceReader, definition: DefInfo, new: str | None = None
) -> tuple[Replacement, Replacement] | None:
    """The function's ``f = tf.function(g)`` moved before its loop, its call written as ``new`` (None: as it is)."""
    if definition.wrap_call is None or definition.wrap_text is None:
        return None
    once = pipeline_edits(reader, f"{definition.wrap_call.path}:{definition.wrap_call.line}")
    if once is None or new is None:
        return once
    removal, insertion = once
    if insertion.text.count(definition.wrap_text) != 1:
        return None
    return removal, Replacement(insertion.span, insertion.text.replace(definition.wrap_text, new))


def made_once(
    reader: SourceReader, site: str, name: str, maker: Callable[[ast.Module, str], bool]
) -> tuple[Replacement, Replacement] | None:
    """``name = maker(...)`` in the innermost loop around ``site``, moved before that loop.

    Only from constants and names the loop neither binds nor touches, ``name`` bound once in the
    loop and never touched there either, not read in the loop before that statement (the first
    pass would see the object made before the loop), nor after the loop (a loop that never runs
    would now leave it bound), and the maker not a name the loop binds.
    """
    path, _, line_text = site.rpartition(":")
    parsed = reader.module(path)
    if parsed is None or not line_text.isdigit():
        return None
    text, tree = parsed
    line = int(line_text)
    loops = [
        n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While)) and n.lineno <= line <= (n.end_lineno or 0)
    ]
    for loop in sorted(loops, key=lambda n: -n.lineno):  # the innermost loop first
        made = [
            s for s in loop.body
            if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name
        ]
        if len(made) != 1:
            continue
        statement = made[0]
        value = statement.value
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and maker(tree, value.func.id)):
            return None
        bound = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        passed = [*value.args, *(k.value for k in value.keywords)]
        if any(not isinstance(a, (ast.Constant, ast.Name)) or (isinstance(a, ast.Name) and a.id in bound)
               for a in passed):
            return None
        stores = [n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        names = {name} | {a.id for a in passed if isinstance(a, ast.Name)}
        if stores.count(name) != 1 or any(_touched(loop, n) for n in names) or value.func.id in bound:
            return None
        if _read_before(loop, statement, name) or _read_after(tree, loop, name):
            return None
        return _move_before(path, text, loop, statement)
    return None


def _read_before(loop: ast.For | ast.While, statement: ast.stmt, name: str) -> bool:
    # ``name`` read by the loop's header or by a statement of its body before ``statement``.
    header = [loop.iter] if isinstance(loop, ast.For) else [loop.test]
    earlier = [*header, *loop.body[: loop.body.index(statement)]]
    return any(_reads(node, name) for node in earlier)


def _read_after(tree: ast.Module, loop: ast.For | ast.While, name: str) -> bool:
    # ``name`` read in the loop's scope outside the loop (the loop's own else clause included); at
    # module level every function is in that scope (it may read the global after the loop).
    owners = [
        n for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno <= loop.lineno <= (n.end_lineno or 0)
    ]
    scope: ast.AST = max(owners, key=lambda n: n.lineno) if owners else tree
    inside = {id(n) for n in ast.walk(loop)} - {id(n) for s in loop.orelse for n in ast.walk(s)}
    todo: list[ast.AST] = [scope]
    while todo:
        node = todo.pop()
        if node is not scope and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and _local(
            node, name
        ):
            continue  # another function's own variable of that name
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and id(node) not in inside:
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _local(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str) -> bool:
    # ``name`` is a parameter of the function or bound in it without a global/nonlocal declaration.
    if any(a.arg == name for a in ast.walk(function.args) if isinstance(a, ast.arg)):
        return True
    declared = any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in ast.walk(function))
    stored = any(
        (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
        or (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not function
            and n.name == name)
        or (isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in n.names))
        for n in ast.walk(function)
    )
    return stored and not declared


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _touched(loop: ast.For | ast.While, name: str) -> bool:
    # An attribute or item of ``name`` set in the loop, or a method called on it: it may change.
    calls = {id(c.func) for c in ast.walk(loop) if isinstance(c, ast.Call)}
    return any(
        isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.value, ast.Name) and n.value.id == name
        and (isinstance(n.ctx, (ast.Store, ast.Del)) or id(n) in calls)
        for n in ast.walk(loop)
    )


def _move_before(
    path: str, text: str, loop: ast.For | ast.While, statement: ast.Assign
) -> tuple[Replacement, Replacement] | None:
    lines = source_lines(text)  # numbered as ast numbers them
    moved = lines[statement.lineno - 1][statement.col_offset :]
    if statement.end_lineno != statement.lineno:
        return None  # one line only: a multi-line value keeps its own layout where it is
    removed = Span(path, statement.lineno, statement.col_offset, statement.lineno, statement.end_col_offset or 0)
    before = Span(path, loop.lineno, loop.col_offset, loop.lineno, loop.col_offset)
    return Replacement(removed, ""), Replacement(before, moved)


def _loop_statement(tree: ast.Module, line: int) -> tuple[ast.For | ast.While, ast.Assign] | None:
    # The innermost for/while loop whose own body holds a one-name assignment starting at ``line``.
    best: tuple[ast.For | ast.While, ast.Assign] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.While)):
            continue
        for statement in node.body:
            if (
                isinstance(statement, ast.Assign)
                and statement.lineno == line
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                best = (node, statement)
    return best


def _chained(call: ast.Call, value: ast.expr) -> bool:
    # A method called on another call of the chain (`.map(parse)`, `.batch(4)`): the innermost
    # call of the chain is checked to be TensorFlow's itself.
    return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call)
