"""Fix kind tensor-argument: Python numbers, lists and variables passed as tensors; makers, anchors, class."""

from __future__ import annotations

import ast
from dataclasses import replace

from tfretrace.fix.core.anchor_base import Anchors, call_argument, dotted_name, expression, span_of
from tfretrace.fix.core.anchor_moves import any_of
from tfretrace.fix.core.body import assigns_to, number_dtype
from tfretrace.fix.core.call_edits import missing_note, preview, reached, swap_leaf
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.kind import Kind, Maker, Row
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import TF_CHECKED, KindSafety
from tfretrace.fix.core.source import Replacement
from tfretrace.fix.core.specs import NUMBER_DTYPES, is_top
from tfretrace.fix.core.tensor_body import (
    add_n_body,
    body_note,
    rounded_ints,
    tensor_body,
    value_condition,
    with_body,
)
from tfretrace.records.events import INT_AS_CONVERTED, PYTHON, TENSOR, VARIABLE, Leaf

NAME = "tensor-argument"


def python_numbers(ctx: FunctionContext, state: State) -> list[Candidate]:
    """Varying Python int/float/bool arguments (or one element of a literal tuple or dict argument) become
    tensors at the call site, of the dtype TensorFlow accepts.

    Where the run's function can be traced again (``ctx.probe_argument``), TensorFlow decides: the
    argument is tried as a scalar tensor of each candidate dtype (floats: float64, then float32;
    ints: the one a ``tf.summary`` step needs first; bools: bool) and the first whose trace gives
    every recorded trace's outputs is written, so the dtype is the one the graph combines it
    with. Where none traces so, no edit: a statement with what TensorFlow said. Where TensorFlow
    cannot be asked, numbers are guessed from the source as before and bools stay a statement.
    Where other calls already pass a tensor there (labels as a tensor in training, a Python int per class
    when scoring), only the Python values' call sites are edited, to that tensor's dtype (asked alone).
    """
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, PYTHON):
        if not is_top(path) and not _element(calls, path):
            continue
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        types = {leaf.type_name for leaf in leaves if leaf.kind == PYTHON}
        tensors = [leaf for leaf in leaves if leaf.kind == TENSOR]
        if any(leaf.kind not in (PYTHON, TENSOR) for leaf in leaves) or (tensors and not types <= {"int", "float"}):
            continue  # None -> tensor and the like: none_to_zeros
        if not types <= {"int", "float"} and types != {"bool"}:
            continue
        found = _number(ctx, state, path, types)
        if found is not None:
            out.append(found)
    return out


def _element(calls: tuple[Call, ...], path: str) -> bool:
    """Whether ``path`` is one element (``data[1]``, ``hp['lr']``) of a tuple, list or dict argument in every call."""
    head, _, rest = path.partition("[")
    if not is_top(head) or "[" in rest or not rest.endswith("]"):
        return False
    heads = [leaf for c in calls for leaf in c.signature if leaf.path == head]
    return len(heads) == len(calls) and all(leaf.kind in ("tuple", "list", "dict") for leaf in heads)


def _number(ctx: FunctionContext, state: State, path: str, types: set[str | None]) -> Candidate | None:
    # Calls that already pass a tensor there (labels as a tensor while training, each label a Python int
    # while scoring) stay as they are, and so do their sites: only the Python values become tensors.
    valued = [any(leaf.path == path and leaf.kind == PYTHON for leaf in c.signature) for c in state.replay.calls]
    calls = tuple(c for c, value in zip(state.replay.calls, valued, strict=True) if value)
    others = [c for c, value in zip(state.replay.calls, valued, strict=True) if not value]
    keep, sites = ctx.sites(others), set(ctx.sites(calls))
    if set(keep) & sites:
        return None  # one line passes both: a tensor there cannot be wrapped again
    if keep and set(ctx.all_sites(calls)) - sites - set(keep):
        return None  # a line the run never recorded calls it too: whether it passes a tensor is not known
    flag = types == {"bool"}
    guess = "bool" if flag else NUMBER_DTYPES["float" if "float" in types else "int"]
    node = None if ctx.definition is None else ctx.definition.node
    if guess == "int32" and node is not None:
        guess = number_dtype(node, path)  # a tf.summary step must be int64
    # The dtype the program's own tensors have there, where some calls pass one: the body is written for it.
    given = {leaf.dtype for c in others for leaf in c.signature if leaf.path == path and leaf.kind == TENSOR}
    own = next(iter(given)) if len(given) == 1 else None
    if keep and own is None:
        return None
    # What no trace can show: a use that reads the Python value silently (an f-string, a dict key).
    rewritten, problem = tensor_body(ctx, path, guess, arithmetic=False, probed=True)
    if problem:
        return _python_use(ctx, path, problem)
    # A Python float is a float64: asked first, a float64 tensor traces only where the body keeps that
    # precision (float64 math, a list packed as float64, a cast) and fails where it meets float32 tensors,
    # whose math took the value as float32 in the trace too. Asked float32 first, a value exact in float32
    # (0.5) hid the rounding a float64 body then made of 0.1. An int the body mixes with float tensors
    # (``epoch / EPOCHS * kl``) refuses every int dtype: float32 is asked last, and TensorFlow runs both
    # versions (its graph folds the value where the trace did not).
    order = {"float32": ("float64", "float32"), "int32": ("int32", "int64", "float32"),
             "int64": ("int64", "int32", "float32")}
    # A body the step edits too (tf.constant(n) becomes tf.convert_to_tensor(n)) is not the one the
    # run traced: TensorFlow traces the def as the step (and the steps before it) leave it, and runs
    # it beside every recorded trace (runtime.probe).
    edited = (*state.body, *rewritten)
    asked = ctx.tensor_dtype(path, (own,) if own is not None else order.get(guess, (guess,)), edited, state.hoisted)
    dtype, said, depends, compared = asked
    converted = False  # written tf.constant(n): int32 where it fits, int64 beyond
    if dtype == "int32" and depends is None and own is None:
        # An int32 tensor refuses the Python ints beyond its range that the original took; an int64
        # one takes every int a tensor can hold. Written where TensorFlow traces and runs it so too.
        wide = ctx.tensor_dtype(path, ("int64",), edited, state.hoisted)
        if wide[0] == "int64" and wide[2] is None:
            dtype, compared = "int64", wide[3]
        else:
            # int64 gives other outputs (an int32 result, tf.range(n)): tf.constant(n) converts the int as the
            # body's own tf.constant(n) did, int32 for every recorded value and int64 beyond, where TensorFlow
            # traces and runs the int64 version to the same values too. Nothing then fails at the call site.
            natural = ctx.tensor_dtype(path, (INT_AS_CONVERTED,), edited, state.hoisted)
            if natural[0] == INT_AS_CONVERTED and natural[2] is None:
                converted, compared = True, natural[3]
    if dtype == "float32" and guess != "float32" and depends is None:
        depends = rounded_ints(calls, path)
    if not is_top(path) and (dtype is None or depends is not None):
        # An element of a tuple or dict argument is written only where TensorFlow ran both versions to
        # the same results; otherwise the makers for nested values (by hand) say what to do.
        return None
    if said is not None:
        return Candidate(
            "python-value-changed",
            "statement",
            f"{path} takes a new Python value per call, and TensorFlow refuses it as a scalar tensor ({said}): it "
            "cannot simply become a tensor; each new value costs one trace",
            None,
            python_use=said,
        )
    if dtype is None and flag:
        return _flag_statement(ctx, path)
    checked = dtype is not None
    dtype = dtype or guess
    body, problem = tensor_body(ctx, path, dtype, arithmetic="float" not in types and not checked, probed=checked)
    if problem and ctx.probe_argument is None:
        # A plain run asked TensorFlow nothing: an int mixed with other operands may well take a float32
        # tensor (the dtype the probe tries last for it). Only TensorFlow can say, so the step is
        # unsafe and unasked (the report's Check: is the run that asks), not a "cannot" it never heard.
        guessed = tensor_body(ctx, path, "float32", arithmetic=False)
        if guessed[1] is None:
            dtype, (body, problem) = "float32", guessed
    if problem:
        return _python_use(ctx, path, problem)
    if checked and body != rewritten:
        checked = False  # TensorFlow was asked of another body than the one written: not checked
    tensor = Leaf(path, TENSOR, dtype=dtype, shape=())
    new = {c.index: replace(c, signature=swap_leaf(c.signature, path, tensor)) for c in calls}
    written = "{tf}.constant({expr})" if converted else f"{{tf}}.constant({{expr}}, dtype={{tf}}.{dtype})"
    edits, missing = ctx.arg_edits(calls, path, written, keep)
    if not is_top(path) and (missing or not edits):
        return None  # an element the call site does not write out (a tuple built elsewhere): by hand
    fallback = f"{ctx.short}(..., {path}={written.format(tf=ctx.tf, expr=path)})"
    code = preview(ctx, body, edits) or fallback
    edits = with_body(edits, body, missing)
    ran = f"; it ran both on {compared} inputs to the same results" if compared else ""
    if checked and dtype == "float32" and guess != "float32":
        ran += "; ints are exact in float32 up to 2**24, as every recorded value is"
    named = f"{dtype}, or int64 beyond its range, as TensorFlow converts a Python int" if converted else dtype
    verdict = (
        f" ({named}: TensorFlow traced {ctx.short} so, to the outputs of every trace of this run{ran})"
        if checked else ""
    )
    return Candidate(
        "python-value-changed",
        NAME,
        f"pass {path} as a {dtype} tensor at the call site" + verdict + body_note(body, ctx) + missing_note(missing),
        code,
        edits,
        _with_body(state.map_calls(reached(new, calls, missing)), edits, body),
        tf_check=TF_CHECKED if checked else None,
        # The program's own tensors there have this dtype: its range is the body's already.
        condition=(depends if own is not None or converted else value_condition(dtype, depends)) if checked else None,
        compared=compared if checked else 0,
    )


def _with_body(state: State, edits: tuple[Replacement, ...], body: tuple[Replacement, ...]) -> State:
    """The state with the step's body edits, where it makes them, added to those of the steps before."""
    made = tuple(e for e in body if e in edits)
    return replace(state, body=(*state.body, *made)) if made else state


def _python_use(ctx: FunctionContext, path: str, problem: str) -> Candidate:
    return Candidate(
        "python-value-changed",
        "statement",
        f"{path} takes a new Python value per call, but {ctx.short} uses it as a Python value "
        f"({problem}): it cannot simply become a tensor; each new value costs one trace",
        None,
        python_use=problem,
    )


def _flag_statement(ctx: FunctionContext, path: str) -> Candidate:
    # TensorFlow was not asked: a bool stays a Python value, two traces at most.
    return Candidate(
        "python-value-changed",
        "statement",
        f"{path} is a Python bool: one trace per value (True/False) is expected and cheap; "
        f"pass {ctx.tf}.constant({path}) only if it changes often",
        None,
    )


def lists(ctx: FunctionContext, state: State) -> list[Candidate]:
    """Lists of Python numbers whose length or values vary become one tensor; variables are a statement."""
    out: list[Candidate] = []
    calls = state.replay.calls
    resized = varying_paths(calls, "list") + varying_paths(calls, "tuple")
    # Lists of one length whose numbers change (`f(x, [lr, 0.9])`): each new value traces too.
    revalued = [p.partition("[")[0] for p in varying_paths(calls, PYTHON) if not is_top(p) and "[" in p]
    for path in dict.fromkeys(resized + [p for p in revalued if p not in resized]):
        heads = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        if not is_top(path) or any(h.kind not in ("list", "tuple") for h in heads):
            continue
        kids = [leaf for c in calls for leaf in c.signature if leaf.path.startswith(path + "[")]
        lengths = sorted({h.value or "" for h in heads})
        if any(k.kind == VARIABLE for k in kids):
            out.append(
                Candidate(
                    "structure-changed",
                    "statement",
                    f"{path} is a list of tf.Variables of {len(lengths)} lengths: one trace per length is expected "
                    f"(variables cannot be stacked into one tensor and still be assigned); it costs "
                    f"{len(lengths) - 1} extra trace(s) per tf.function object",
                    None,
                )
            )
            continue
        numbers = all(k.kind == PYTHON and k.type_name in ("int", "float") for k in kids)
        if not numbers and len(lengths) == 1 and {h.kind for h in heads} == {"list", "tuple"}:
            continue  # one length, a list on some calls and a tuple on others: tuple-argument's, not a stack
        if not numbers:
            stacked = _stack_advice(ctx, state, path, kids, len(lengths))
            if stacked is not None:
                out.append(stacked)
            continue
        dtype = "float32" if any(k.type_name == "float" for k in kids) else "int32"
        body, problem = tensor_body(ctx, path, dtype, arithmetic=False)
        checked = None
        depends = None
        compared = 0
        if not problem:
            # TensorFlow decides the dtype, as for a number (python_numbers); a body the step edits
            # too is traced and run as the step edits it.
            order = ("float64", "float32") if dtype == "float32" else ("int32", "int64")  # as for a number
            edited = (*state.body, *body)
            found, said, depends, compared = ctx.tensor_dtype(path, order, edited, state.hoisted)
            if found == "int32" and depends is None:
                # As for a number: int64 takes every Python int the original took, where TensorFlow agrees.
                wide = ctx.tensor_dtype(path, ("int64",), edited, state.hoisted)
                if wide[0] == "int64" and wide[2] is None:
                    found, compared = "int64", wide[3]
            if said is not None:
                out.append(Candidate(
                    "structure-changed" if path in resized else "python-value-changed",
                    "statement",
                    f"{path} is a Python list of numbers, and TensorFlow refuses it as a tensor ({said}): each "
                    "new list costs one trace",
                    None,
                    python_use=said,
                ))
                continue
            dtype, checked = (found, TF_CHECKED) if found is not None else (dtype, None)
            if checked and body and tensor_body(ctx, path, dtype, arithmetic=False)[0] != body:
                checked = None  # the body written for that dtype is not the one TensorFlow was asked of
        if problem:
            out.append(
                Candidate(
                    "structure-changed",
                    "statement",
                    f"{path} is a Python list of numbers of {len(lengths)} lengths, but {ctx.short} uses it as a "
                    f"Python list ({problem}): a tensor would break the body; each length costs one trace",
                    None,
                    python_use=problem,
                )
            )
            continue
        new = {}
        for c in calls:
            size = sum(
                1
                for leaf in c.signature
                if leaf.path.startswith(path + "[") and leaf.path.count("[") == path.count("[") + 1
            )
            kept = tuple(leaf for leaf in c.signature if not leaf.path.startswith(path + "["))
            new[c.index] = replace(c, signature=swap_leaf(kept, path, Leaf(path, TENSOR, dtype=dtype, shape=(size,))))
        edits, missing = ctx.arg_edits(calls, path, f"{{tf}}.constant({{expr}}, dtype={{tf}}.{dtype})")
        code = preview(ctx, body, edits) or f"{ctx.short}(..., {path}={ctx.tf}.constant({path}, dtype=...))"
        edits = with_body(edits, body, missing)
        out.append(
            Candidate(
                "structure-changed" if path in resized else "python-value-changed",
                NAME,
                f"pass {path} as one {dtype} tensor (its "
                + ("length" if path in resized else "numbers") + " can then vary)" + body_note(body, ctx)
                + missing_note(missing),
                code,
                edits,
                _with_body(state.map_calls(reached(new, calls, missing)), edits, body),
                tf_check=checked,
                condition=value_condition(dtype, depends) if checked else None,
                compared=compared if checked else 0,
            )
        )
    return out


def _stack_advice(
    ctx: FunctionContext, state: State, path: str, kids: list[Leaf], lengths: int
) -> Candidate | None:
    # Tensors of one dtype and shape in lists of several lengths: one stacked tensor covers them
    # all, but the body must then treat it as one tensor (tf.add_n(list) is not tf.add_n(stacked)).
    depth = path.count("[") + 1
    direct = [k for k in kids if k.path.count("[") == depth]
    if not direct or any(k.kind != TENSOR for k in direct):
        return None
    if len({(k.dtype, k.shape) for k in direct}) != 1 or len(direct) != len(kids):
        return None
    first = direct[0]
    shape = first.shape or ()
    new = {}
    for c in state.replay.calls:
        size = sum(1 for leaf in c.signature if leaf.path.startswith(path + "[") and leaf.path.count("[") == depth)
        kept = tuple(leaf for leaf in c.signature if not leaf.path.startswith(path + "["))
        stacked = Leaf(path, TENSOR, dtype=first.dtype, shape=(size, *shape))
        new[c.index] = replace(c, signature=swap_leaf(kept, path, stacked))
    moved = state.map_calls(dict(new))
    body = add_n_body(ctx, path)
    edits, missing = ctx.arg_edits(state.replay.calls, path, "{tf}.stack({expr})")
    if body is not None and edits and not missing:
        # The body only sums the list (tf.add_n): the stacked tensor sums to the same value. TensorFlow
        # traces the body so edited with the stacked tensor and runs it beside every recorded trace.
        edited = (*state.body, body)
        asked = ctx.tensor_dtype(path, (first.dtype,), edited, state.hoisted) if first.dtype else (None, None, None, 0)
        found, _said, depends, compared = asked
        checked = TF_CHECKED if found is not None else None
        return Candidate(
            "structure-changed",
            NAME,
            f"pass {ctx.tf}.stack({path}) (one {first.dtype} tensor whose length can vary) and sum it with "
            f"{ctx.tf}.reduce_sum({path}, axis=0) in {ctx.short}'s body instead of {ctx.tf}.add_n({path})",
            preview(ctx, (body,), edits),
            (body, *edits),
            _with_body(moved, (body,), (body,)),
            tf_check=checked,
            # The list held tensors of that dtype already: no Python int is narrowed, only the run decides.
            condition=depends if checked else None,
            compared=compared if checked else 0,
        )
    return Candidate(
        "structure-changed",
        "advice",
        f"{path} is a list of {lengths} lengths of {first.dtype} tensors: pass {ctx.tf}.stack({path}) and make "
        f"{ctx.short} treat it as one tensor (e.g. {ctx.tf}.reduce_sum({path}, axis=0) for {ctx.tf}.add_n({path}))",
        None,
        (),
        replace(moved, signature_advice=True),
    )


def read_only_variables(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A tf.Variable argument the body only reads is passed as a tensor: trainable/aliasing stop mattering."""
    out: list[Candidate] = []
    calls = state.replay.calls
    node = None if ctx.definition is None else ctx.definition.node
    if node is None:
        return out
    for path in varying_paths(calls, VARIABLE):
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        if not is_top(path) or any(leaf.kind != VARIABLE for leaf in leaves) or assigns_to(node, path):
            continue
        new = {
            c.index: replace(
                c,
                signature=tuple(
                    Leaf(leaf.path, TENSOR, dtype=leaf.dtype, shape=leaf.shape) if leaf.path == path else leaf
                    for leaf in c.signature
                ),
            )
            for c in calls
        }
        edits, missing = ctx.arg_edits(calls, path, "{tf}.convert_to_tensor({expr})")
        # TensorFlow traces the body with the variable a tensor of its dtype and runs it beside each
        # recorded trace, on new variables of the recorded specs (the values every variable is left
        # with compared too): where every dtype is one and equal everywhere, the step is safe.
        dtypes = {leaf.dtype for leaf in leaves}
        dtype = next(iter(dtypes)) if len(dtypes) == 1 else None
        found, _said, depends, compared = (
            ctx.tensor_dtype(path, (dtype,), state.body, state.hoisted) if dtype else (None, None, None, 0)
        )
        checked = TF_CHECKED if found is not None else None
        out.append(
            Candidate(
                "variable-spec-changed",
                NAME,
                f"pass {path} as a tensor ({ctx.short} only reads it): variables differ in trainable flag or "
                "aliasing, tensors of one shape do not" + missing_note(missing),
                ctx.reader.preview(edits) or f"{ctx.short}(..., {path}={ctx.tf}.convert_to_tensor({path}))",
                edits,
                state.map_calls(reached(new, calls, missing)),
                tf_check=checked,
                condition=depends if checked else None,
                compared=compared if checked else 0,
            )
        )
    return out


def body_constant(anchors: Anchors, edit: Replacement) -> str | None:
    """``tf.constant(<param>...)`` in the function's body -> ``tf.convert_to_tensor`` of the same arguments."""
    definition = anchors.definition
    if definition is None or definition.node is None or definition.path != edit.span.path:
        return "not in the function's body"
    alias = definition.tf_alias
    if alias is None:
        return "the file does not import tensorflow"  # `tf` there is the program's own name
    found = next((
        n for n in ast.walk(definition.node)
        if isinstance(n, ast.Call) and span_of(n, edit.span.path) == edit.span
        and dotted_name(n.func) == [alias, "constant"]
        and any(isinstance(x, ast.Name) and x.id in definition.params for a in n.args for x in ast.walk(a))
    ), None)
    if found is None:
        return "not a tf.constant of a parameter in the function's body"
    new = expression(edit.text)
    if (
        not isinstance(new, ast.Call)
        or dotted_name(new.func) != [alias, "convert_to_tensor"]
        or [ast.dump(a) for a in new.args] != [ast.dump(a) for a in found.args]
        or [ast.dump(k) for k in new.keywords] != [ast.dump(k) for k in found.keywords]
    ):
        return "the new text is not tf.convert_to_tensor of the same arguments"
    return None


def body_sum(anchors: Anchors, edit: Replacement) -> str | None:
    """``tf.add_n(<param>)`` in the function's body -> ``tf.reduce_sum(<param>, axis=0)``."""
    definition = anchors.definition
    if definition is None or definition.node is None or definition.path != edit.span.path:
        return "not in the function's body"
    alias = definition.tf_alias
    if alias is None:
        return "the file does not import tensorflow"
    found = next((
        n for n in ast.walk(definition.node)
        if isinstance(n, ast.Call) and span_of(n, edit.span.path) == edit.span
        and dotted_name(n.func) == [alias, "add_n"] and len(n.args) == 1 and not n.keywords
        and isinstance(n.args[0], ast.Name) and n.args[0].id in definition.params
    ), None)
    if found is None:
        return "not a tf.add_n of a parameter in the function's body"
    wanted = ast.parse(f"{alias}.reduce_sum({ast.unparse(found.args[0])}, axis=0)", mode="eval").body
    new = expression(edit.text)
    if new is None or ast.dump(new) != ast.dump(wanted):
        return "the new text is not tf.reduce_sum of the same list along axis 0"
    return None


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety(
        "a Python value becomes a tensor of the dtype tfretrace chose: where the body mixes it with data of "
        "another dtype (a float32 tensor times float64 data, an int32 step / 10) TensorFlow refuses or "
        "computes in another dtype (TensorFlow did not trace it: no live module-level function to probe), "
        "and a variable passed as a tensor no longer aliases it",
        "one graph for every value; safe only where TensorFlow, after the run, traced the body with the value a "
        "tensor of that dtype (every trace of the run replayed) to the run's outputs, and each trace's graph is "
        "that graph with the value as data: the same operations, the value's constants where the tensor is read, "
        "or, where the graphs part, TensorFlow ran both on the same inputs to the same results. An int is written "
        "as int64 where TensorFlow takes it so; where int64 changes the outputs (an int32 result), as tf.constant "
        "converts it (int32 where it fits, int64 beyond) where TensorFlow ran the int64 version to the same "
        "values; as int32 it stays unsafe: a value beyond int32 fails at the call site, where the original took it",
        value_checked=True,
    ),
    # At the call sites, and in the body: tf.constant(param) -> tf.convert_to_tensor, tf.add_n -> reduce_sum.
    check=any_of(call_argument("constant", "convert_to_tensor", "stack"), body_constant, body_sum),
    generalizes=True,
    row=Row(
        'safe when TensorFlow says so (an `int` as `int64`, or as `tf.constant` converts it; unsafe where an '
        '`int32`)',
        'a Python number, bool or list of numbers of a module-level function (or a method, on each live '
        'instance), or a number one element deep in a tuple, list or dict the call site writes out '
        '(`f((x, label))`, `f(x, {"lr": lr})`: written only where TensorFlow ran both versions to the same '
        'results), becomes a tensor of the first dtype (a float: float64, as precise as a Python float, then '
        'float32, where it meets float32 tensors; an int: int32, int64, then float32, where the body '
        'mixes it with floats; exact up to 2**24; an int whose int64 tensor changes the outputs (an int32 '
        'result) is written `tf.constant(n)`, int32 where it fits and int64 beyond, as the body\'s own '
        '`tf.constant(n)` converted it, where TensorFlow traced and ran the int64 version to the same values; '
        'where other calls pass a tensor there, its dtype, and only '
        'the Python values\' call sites are edited) with which TensorFlow, after the run, traced the '
        'body (every trace of the run replayed with that argument a `tf.TensorSpec`) to the outputs of '
        'every trace (`"checked": "tensorflow"`); none: no edit, a statement with what TensorFlow said. '
        "Safe only where each trace's graph is the graph of the value as a tensor with the value as data,"
        ' or where TensorFlow ran both on the same inputs to the same results: see '
        '[below](#python-values-made-tensors); otherwise unsafe, saying where they part. A model, optimizer or '
        'loss passed as an argument is passed again as the live object the trace was keyed by. Unprobed (a '
        'nested def, an object argument that is gone): the dtype tfretrace guessed; a variable passed as a '
        'tensor no longer aliases it. A body the step edits too (`tf.constant` -> `tf.convert_to_tensor`, '
        '`tf.add_n` -> `tf.reduce_sum`) is traced and run as edited, compiled in memory; a `tf.Variable` the body '
        'only reads is run on new variables of the recorded specs, the values they are left with compared',
        '`p08_float_times_f64.py` (item 8: float64, safe, prints the same), `p13_rate_type_test.py` (a '
        "body's `isinstance(rate, float)`: unsafe, the graphs part), `p09_int_divided.py` (item 9: no "
        'int tensor, which crashed; a float32 one, run both ways to the same results)',
    ),
    call_sites=True,
    position=130,
    makers=(
        Maker(python_numbers, 10, call_sites=True), Maker(lists, 40, call_sites=True), Maker(read_only_variables, 70),
    ),
)
