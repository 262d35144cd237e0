"""Fix kind keras-pad-rows: Keras ``predict`` in full batches (rows padded, outputs cut back); maker, anchors, class.

Keras 3's ``predict`` builds one ``tf.function`` (``reduce_retracing=True``) and calls it once per
batch with that batch's tensors: the first batch shape traces, a new one (a partial last batch,
or a few rows before many) traces again with the batch dimension relaxed to ``None``, and the
relaxed trace serves every later call. One trace above the minimum per model.

The edit: each ``model.predict(x, ...)`` call at a line where the run saw that model's predict becomes
``predict_full_batches(model, x, ...)``, a helper written once at the top of the file (after its
imports). Where the run made calls after the relaxed trace (at lines it never recorded, since they did
not trace), each module-level ``.predict`` of the same batch size whose receiver is the recorded one, a
name one module-level statement binds and nothing else does (so the same model), is rewritten too, where
every recorded call is itself such a call: the edit removes the relaxed trace
those calls used. A ``.predict`` anywhere else, whatever its receiver is called, is left as it is. For
NumPy inputs (an eager float32 tensor is predicted as the NumPy array it holds: the same values in the
same dtype, so the same trace) the helper predicts the full batches as they are (views: the input is never copied)
and the last partial batch padded on the rows only (axis 0, the last row repeated) to a full one,
so every batch has one shape, and cuts every output (each of a dict, list or tuple) back to the
rows given; any other input (a dataset, a tensor of another dtype, no rows) goes to ``predict`` as it was. With a
progress bar, the full batches and the last one show as two bars.

Safe where every model that predicted at those lines computes each row from that row alone
(``runtime.predict_rows``): asked of the live model once the program has finished (its recorded
last rows predicted padded and not, every output compared; ``tfretrace._tf.keras_live``), or, where
it could not be asked, read while ``predict`` ran (``tfretrace._tf.keras_rows``: Keras' own
Sequential/Functional, every layer of a known per-row kind, no ``training=True``, one step per
execution), and every recorded input was NumPy arrays or float32 tensors. The kept rows' predictions
are then the ones the original computed (a batch of another size may round differently in the last
digits on some kernels: ``float-last-digits``). Otherwise the step is unsafe with that reason. Predicted: every
recorded call with its rows set to the call site's batch size; offered only where the relaxed
traces left no other dimension open (a call never recorded may then differ only in its rows), and
the model's name calls no ``predict_on_batch`` in the file. Not seen: a call that hit the relaxed
trace (never recorded, so its input was not read) and passed a dataset goes to ``predict`` as it
was and traces its partial batch again; a model that predicted at an edited line only through the
relaxed trace (never traced there) is not asked; a call of the same model at a line never recorded
is rewritten only as said above (module level, a name bound once).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors, expression, span_of
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.source import Replacement, Span, is_user_path
from tfretrace.records.events import CONTAINERS, TENSOR

NAME = "keras-pad-rows"
HELPER_NAME = "predict_full_batches"
ROWS_INDEPENDENT = "independent"  # tfretrace._tf.keras_rows' verdict, as the session stores it
_KEYWORDS = frozenset({"verbose", "batch_size"})
_DEFAULT_BATCH = 32  # Keras' predict on arrays: `if not batch_size: batch_size = 32`

HELPER = f'''def {HELPER_NAME}(model, x, batch_size=None, **kwargs):
    """model.predict(x, ...) in full batches: the same predictions, one batch shape.

    Written by tfretrace fix (keras-pad-rows). predict traces again for every new batch shape (a
    partial last batch, a few rows before many). The full batches of NumPy inputs (a float32 tensor
    as the NumPy array it holds) go to predict as they are (views, not copies); the last partial
    batch is padded, its last row repeated, to a full one, and its outputs are cut back to the rows
    given: the model computes each row from that row alone, so the kept rows are the ones predict
    computed. Other inputs go to predict as they were.
    """
    import numpy as np
    import tensorflow as tf

    if tf.executing_eagerly():  # a float32 tensor is predicted as the NumPy array it holds: the same values
        x = tf.nest.map_structure(lambda a: a.numpy() if isinstance(a, tf.Tensor) and a.dtype == "float32" else a, x)
    size = batch_size or {_DEFAULT_BATCH}  # predict's own default for arrays
    rows = {{len(a) if type(a) is np.ndarray and a.ndim else 0 for a in tf.nest.flatten(x)}}
    extra = -min(rows) % size
    if len(rows) != 1 or 0 in rows or extra == 0:
        return model.predict(x, batch_size=batch_size, **kwargs)
    (count,) = rows
    full = count - count % size  # the rows of the full batches

    def pad(a):
        return np.concatenate([a[full:], np.repeat(a[-1:], extra, axis=0)])

    head = None
    if full:
        head = model.predict(tf.nest.map_structure(lambda a: a[:full], x), batch_size=batch_size, **kwargs)
    last = model.predict(tf.nest.map_structure(pad, x), batch_size=batch_size, **kwargs)
    if head is None:
        return tf.nest.map_structure(lambda y: y[:count], last)
    return tf.nest.map_structure(lambda h, y: np.concatenate([h, y[:count - full]]), head, last)
'''


def pad_rows(ctx: FunctionContext, state: State) -> Candidate | None:
    """The model's ``model.predict(x)`` at each recorded line -> ``predict_full_batches(model, x)``: one batch shape."""
    keras = ctx.report.keras
    calls = state.replay.calls
    if keras is None or keras.method != "predict" or len(calls) < 2 or state.keras_padded:
        return None
    verdicts = [e.keras.rows for e in ctx.report.events if e.keras is not None]
    if not verdicts or any(v is None for v in verdicts):
        return None  # not read while predict ran (Keras 2, a session from before): nothing to check
    for event in ctx.report.events:
        for leaf in event.traced_as or ():
            if leaf.kind == TENSOR and leaf.shape is not None and None in leaf.shape[1:]:
                return None  # calls served by this trace may differ in more than their rows: not predictable
    sites = ctx.sites(calls)
    # Calls after the last trace were served by the relaxed trace, at lines the run never recorded: the
    # edit removes that trace, so the model's other module-level predict calls are padded too.
    unseen = ctx.report.calls > max((e.calls_total or 0 for e in ctx.report.events), default=0)
    found = _site_calls(ctx, sites, unseen)
    if found is None:
        return None
    edits, batch_of = found
    new = {}
    for call in calls:
        size = batch_of.get(call.site or "")
        if size is None:
            return None
        signature = []
        for leaf in call.signature:
            if leaf.kind in CONTAINERS:  # the batch's list or tuple
                signature.append(leaf)
                continue
            if leaf.kind != TENSOR or not leaf.shape or not isinstance(leaf.shape[0], int) or leaf.shape[0] > size:
                return None  # per-replica values, a Python value, a row count above the batch size
            signature.append(replace(leaf, shape=(size, *leaf.shape[1:])))
        new[call.index] = replace(call, signature=tuple(signature))
    changed: dict[int, Call | None] = dict(new)
    reason = next((v for v in verdicts if v != ROWS_INDEPENDENT), None)
    sizes = sorted(set(batch_of.values()))
    return Candidate(
        "shape-changed",
        NAME,
        f"predict in full batches: pad the rows of its NumPy or float32 inputs to a multiple of the batch size "
        f"({', '.join(map(str, sizes))}) and cut the outputs back ({HELPER_NAME}, written once in the file)",
        _code(ctx, edits),
        edits,
        replace(state.map_calls(changed), keras_padded=True),
        condition=None if reason is None else f"padding the rows may change the kept rows' predictions: {reason}",
    )


def _code(ctx: FunctionContext, edits: tuple[Replacement, ...]) -> str | None:
    """The calls as they read after the edit, under a line saying where the helper goes (the diff shows it whole)."""
    calls = ctx.reader.preview([e for e in edits if e.text != HELPER]) or ""
    helpers = ", ".join(f"{e.span.path}:{e.span.line}" for e in edits if e.text == HELPER)
    return f"# def {HELPER_NAME}(model, x, batch_size=None, **kwargs) written before {helpers}\n{calls}"


def _site_calls(
    ctx: FunctionContext, sites: list[str], unseen: bool = False
) -> tuple[tuple[Replacement, ...], dict[str, int]] | None:
    """The edits (the helper, and the call at each recorded site) and each site's batch size; None where any
    recorded call is out of reach.

    The lines where the run saw this model's predict are edited: a ``.predict`` elsewhere in the file whose
    receiver reads the same (another function's ``model``, another class's object) may be anything. With
    ``unseen`` calls (served by the relaxed trace, never recorded), also each module-level ``.predict`` of the
    same batch size whose receiver is the recorded one, a module-level name bound once: the same model.
    """
    receivers: dict[str, set[str]] = {}
    batch_of: dict[str, int] = {}
    calls: dict[str, list[ast.Call]] = {}
    for site in sites:
        path, _, line = site.rpartition(":")
        parsed = ctx.reader.module(path) if is_user_path(path) and line.isdigit() else None
        if parsed is None:
            return None
        at = [c for c in _predict_calls(parsed[1]) if c.lineno <= int(line) <= (c.end_lineno or c.lineno)]
        if len(at) != 1 or _batch_size(at[0]) is None:
            return None
        assert isinstance(at[0].func, ast.Attribute)
        receivers.setdefault(path, set()).add(ast.unparse(at[0].func.value))
        batch_of[site] = _batch_size(at[0]) or _DEFAULT_BATCH
        if at[0] not in calls.setdefault(path, []):
            calls[path].append(at[0])
    edits: list[Replacement] = []
    for path, names in receivers.items():
        parsed = ctx.reader.module(path)
        assert parsed is not None
        tree = parsed[1]
        if _binds(tree, HELPER_NAME) or _other_uses(tree, names):
            return None
        top = _after_imports(tree)
        if top is None:
            return None
        same = same_model_calls(tree, names) if unseen else []
        if same and all(c in same for c in calls[path]):
            # Only where every recorded call is itself such a call: then the name is that model everywhere.
            sizes = {batch_of[site] for site in sites if site.rpartition(":")[0] == path}
            calls[path] += [c for c in same if c not in calls[path] and (_batch_size(c) or _DEFAULT_BATCH) in sizes]
        first = _start(top)
        edits.append(Replacement(Span(path, first, 0, first, 0), HELPER))
        edits.extend(Replacement(span_of(call, path), _helper_call(call)) for call in calls[path])
    return tuple(edits), batch_of


def same_model_calls(tree: ast.Module, receivers: set[str]) -> list[ast.Call]:
    """Module-level ``.predict`` calls of a taking-it-as-is form whose receiver is one of ``receivers``, a name the
    module binds once (one assignment, never deleted, rebound or declared global in a def): the same object."""
    nested = {id(n) for d in ast.walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                               ast.Lambda))
              for n in ast.walk(d)}
    return [c for c in _predict_calls(tree) if id(c) not in nested and _batch_size(c) is not None
            and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
            and c.func.value.id in receivers and _bound_once(tree, c.func.value.id)]


def _bound_once(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is bound by one plain assignment, a statement of the module itself (not in a loop, an if,
    a with or a try: run once), and by nothing else anywhere in the file."""
    stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
              and isinstance(n.ctx, (ast.Store, ast.Del))]
    top = [n for statement in tree.body if isinstance(statement, (ast.Assign, ast.AnnAssign))
           for n in ast.walk(statement) if n in stores]
    declared = any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in ast.walk(tree))
    bound = any(_binds_otherwise(n, name) for n in ast.walk(tree))
    return len(stores) == 1 and len(top) == 1 and isinstance(stores[0].ctx, ast.Store) and not declared and not bound


def _binds_otherwise(node: ast.AST, name: str) -> bool:
    # Bindings that are no ast.Name store: imports (`import a.b` binds a), defs, except-as, match captures.
    if isinstance(node, ast.alias):
        return (node.asname or node.name.partition(".")[0]) == name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
        return node.name == name
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name == name
    return isinstance(node, ast.MatchMapping) and node.rest == name


def _predict_calls(tree: ast.Module) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "predict"]


def _batch_size(call: ast.Call) -> int | None:
    """The batch size of a ``.predict(x[, verbose=..., batch_size=<int>])`` call (0: predict's default); else None."""
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return None
    if any(k.arg not in _KEYWORDS for k in call.keywords):
        return None  # steps, callbacks, **kwargs: not a call the helper takes as it is
    size = next((k.value for k in call.keywords if k.arg == "batch_size"), None)
    if size is None or (isinstance(size, ast.Constant) and size.value is None):
        return 0
    if isinstance(size, ast.Constant) and type(size.value) is int and size.value >= 0:
        return size.value
    return None


def _helper_call(call: ast.Call) -> str:
    assert isinstance(call.func, ast.Attribute)
    parts = [ast.unparse(call.func.value), *(ast.unparse(a) for a in call.args),
             *(f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords)]
    return f"{HELPER_NAME}({', '.join(parts)})"


def _binds(tree: ast.Module, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == name:
            return True
    return False


def _other_uses(tree: ast.Module, receivers: set[str]) -> bool:
    """Whether the file calls the model's predict function another way (predict_on_batch, predict_function)."""
    return any(
        isinstance(n, ast.Attribute) and n.attr in ("predict_on_batch", "predict_function")
        and ast.unparse(n.value) in receivers
        for n in ast.walk(tree)
    )


def _after_imports(tree: ast.Module) -> ast.stmt | None:
    """The first module-level statement after the leading docstring and imports: where the helper goes."""
    for i, node in enumerate(tree.body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not (docstring or isinstance(node, (ast.Import, ast.ImportFrom))):
            return node
    return None


def _start(node: ast.stmt) -> int:
    """The first line of a statement, its decorators included (new lines go before them)."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def check_edit(anchors: Anchors, edit: Replacement) -> str | None:
    """A session's keras-pad-rows edit: the helper, exactly, before a module-level statement; or a
    ``.predict`` call of one input, at a line where the run recorded the model's predict, made
    ``predict_full_batches(receiver, the same arguments)``."""
    keras = anchors.report.keras
    if keras is None or keras.method != "predict":
        return "not a Keras predict function"
    tree = anchors.tree(edit.span.path)
    if tree is None:
        return "the file cannot be read"
    span = edit.span
    if (span.line, span.col) == (span.end_line, span.end_col):
        if edit.text != HELPER:
            return f"the new lines are not tfretrace's {HELPER_NAME}"
        if _binds(tree, HELPER_NAME):
            return f"the file already binds {HELPER_NAME}"
        if span.col != 0 or not any(_start(node) == span.line for node in tree.body):
            return "new lines go only before a module-level statement"
        return None
    found = next((c for c in _predict_calls(tree) if span_of(c, span.path) == span), None)
    if found is None or _batch_size(found) is None:
        return "not a .predict() call of one input, with at most verbose and a literal batch_size"
    sites = {e.call_site for e in anchors.report.events if e.call_site is not None}
    if not any(f"{span.path}:{n}" in sites for n in range(found.lineno, (found.end_lineno or found.lineno) + 1)):
        recorded = [c for c in _predict_calls(tree) if isinstance(c.func, ast.Attribute)
                    and any(f"{span.path}:{n}" in sites for n in range(c.lineno, (c.end_lineno or c.lineno) + 1))]
        names = {ast.unparse(c.func.value) for c in recorded if isinstance(c.func, ast.Attribute)}
        same = same_model_calls(tree, names)
        if found not in same or not all(c in same for c in recorded):
            return ("not a line where the run recorded this model's predict, nor a module-level call of the "
                    "recorded receiver bound once (another object's .predict may read the same)")
    new = expression(edit.text)
    wanted = expression(_helper_call(found))
    if new is None or wanted is None or ast.dump(new) != ast.dump(wanted):
        return f"the new text is not {HELPER_NAME} of the same receiver and arguments"
    return None


def missing_helper(anchors: Anchors, edits: tuple[Replacement, ...]) -> str | None:
    """A step that rewrites a predict call in a file must also write the helper there."""
    helped = {e.span.path for e in edits if e.text == HELPER}
    for edit in edits:
        if edit.text != HELPER and edit.span.path not in helped:
            return f"{edit.span.path}:{edit.span.line}: {NAME} edit refused: {HELPER_NAME} is not written in that file"
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        None,
        "predict's NumPy (or float32 tensor) inputs: the last partial batch padded on the rows only (the last "
        "row repeated) to a full one, every output cut back to the rows given, at the lines the run recorded "
        "(and the same model's other module-level calls); safe only where every model "
        "that predicted there computes each row alone: the live model run again after the program on its recorded "
        "rows padded and not, every output equal (or, where it could not be run, Keras' own Sequential or "
        "Functional of layers known to compute each row alone), and every input was NumPy arrays or float32 "
        "tensors; any other input goes to predict as it was",
        maker_checks=True,
    ),
    check=check_edit,
    whole=missing_helper,  # its new lines are the helper, not a move
    generalizes=True,
    row=Row(
        "safe when checked",
        "each `.predict(x)` at a line where the run saw the model's `predict` (one input, at most "
        '`verbose` and a literal `batch_size`; no `predict_on_batch` of that name in the file) becomes '
        "`predict_full_batches(model, x)`, a helper written once after the file's imports; where the run "
        'called predict after its relaxed trace (lines never recorded), also each module-level `.predict` of the '
        'same batch size on the recorded receiver, where every recorded call is one too and the name is bound '
        'once, by a statement of the module itself; any other `.predict`, '
        'whatever its receiver is called, is left as it is. For NumPy inputs (a float32 tensor as the NumPy '
        'array it holds) the '
        'helper predicts the full batches as they are (views: the input is never copied) and the last '
        'partial batch padded on the rows only (the last row repeated) to a full one, and cuts every '
        'output (dict, list, tuple) back to the rows given; any other input goes to `predict` as it was; '
        'a progress bar shows as two. Safe where every model that predicted at those lines computes each '
        'row alone: once the program has finished, the live model is run again on the last rows `predict`'
        ' got, padded and not, in three row orders, and every output of every kept row compared (custom '
        'layers, subclassed models, several or dict inputs); where it cannot be run, read while `predict`'
        " ran (Keras' own `Sequential`/`Functional` of known per-row layers, no row-combining "
        '`keras.ops`, stateful RNN or `training=True`; one step per execution); and every input was NumPy'
        ' arrays or float32 tensors. Otherwise unsafe, naming the model, line or layer. A row that was in a'
        ' partial batch is computed in a full one: a batch of another size may take another kernel and round '
        "differently in the last digits, as Keras' own `predict` does when its `batch_size` changes",
        'the `k_custom_layer` program of `tests/test_fix_partial_batches_real.py` (a layer that centres '
        'each batch on its mean), and `k_two_models` of `tests/test_fix_keras_rows_real.py` (a plain '
        'model sharing a line with it)',
    ),
    note="; floats may differ in the last digits (a row of a partial batch is computed in a full one)",
    position=110,
    makers=(Maker(pad_rows, 110),),
)
