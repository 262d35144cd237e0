"""Fixes at the call site: lists as one tensor, one dtype, a zero state instead of None, variables read as tensors."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.body import assigns_to, assigns_zeros_when_none
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.safety import TF_CHECKED
from tfretrace.fix.core.source import Replacement
from tfretrace.fix.core.specs import is_top, shape_text
from tfretrace.fix.core.tensor_body import add_n_body, body_note, tensor_body, with_body
from tfretrace.records.events import PYTHON, TENSOR, VARIABLE, Leaf


def dtypes(ctx: FunctionContext, state: State) -> list[Candidate]:
    """Tensors whose dtype varies are cast to one dtype at the call site (dtypes never generalize)."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, TENSOR):
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        if not is_top(path) or any(leaf.kind != TENSOR for leaf in leaves):
            continue
        seen = [leaf.dtype for leaf in leaves]
        if len(set(seen)) < 2 or len({_dtype_family(d) for d in seen}) > 1:
            continue  # no cast turns file names into waveforms: strings and numbers stay apart
        target = max(set(seen), key=lambda d: (seen.count(d), -seen.index(d)))
        new = {
            c.index: replace(
                c, signature=tuple(replace(leaf, dtype=target) if leaf.path == path else leaf for leaf in c.signature)
            )
            for c in calls
        }
        edits, missing = ctx.arg_edits(calls, path, f"{{tf}}.cast({{expr}}, {{tf}}.{target})")
        code = ctx.reader.preview(edits) or f"{path} = {ctx.tf}.cast({path}, {ctx.tf}.{target})"
        out.append(
            Candidate(
                "dtype-changed",
                "cast-dtype",
                f"cast {path} to {target} at the call site ({', '.join(sorted(set(map(str, seen))))} seen)"
                + missing_note(missing),
                code,
                edits,
                state.map_calls(reached(new, calls, missing)),
            )
        )
    return out


def none_to_zeros(ctx: FunctionContext, state: State) -> list[Candidate]:
    """An argument that is None on the first call and a tensor later starts as a zero tensor instead."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, PYTHON):
        leaves = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        nones = [leaf for leaf in leaves if leaf.kind == PYTHON and leaf.type_name == "NoneType"]
        tensors = [leaf for leaf in leaves if leaf.kind == TENSOR]
        if not is_top(path) or not nones or not tensors or len(nones) + len(tensors) != len(leaves):
            continue
        first = tensors[0]
        if first.shape is None or None in first.shape:
            out.append(
                Candidate(
                    "structure-changed",
                    "statement",
                    f"{path} is None on some calls and a tensor of shape {shape_text(first.shape)} on others: "
                    "a zero initial state needs a fully known shape",
                    None,
                )
            )
            continue
        template = f"{{tf}}.zeros({shape_text(first.shape)}, dtype={{tf}}.{first.dtype})"
        zeros = template.format(tf=ctx.tf)
        new = {
            c.index: replace(c, signature=swap_leaf(c.signature, path, first))
            for c in calls
            if any(leaf.path == path and leaf.kind == PYTHON for leaf in c.signature)
        }
        edits, missing = _zero_edits(ctx, calls, path, template)
        same = (
            ctx.definition is not None
            and ctx.definition.node is not None
            and assigns_zeros_when_none(ctx.definition.node, path)
        )
        caveat = "" if same else f" (the same result only if {ctx.short} treats None as a zero state)"
        code = ctx.reader.preview(edits) or f"{path} = {zeros}"
        out.append(
            Candidate(
                "structure-changed",
                "zero-state",
                f"start {path} as a zero tensor of shape {shape_text(first.shape)} instead of None{caveat}"
                + missing_note(missing),
                code,
                edits,
                state.map_calls(reached(new, calls, missing)),
            )
        )
    return out


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
        if not numbers:
            stacked = _stack_advice(ctx, state, path, kids, len(lengths))
            if stacked is not None:
                out.append(stacked)
            continue
        dtype = "float32" if any(k.type_name == "float" for k in kids) else "int32"
        body, problem = tensor_body(ctx, path, dtype, arithmetic=False)
        checked = None
        if not problem and not body:
            # TensorFlow decides the dtype, as for a number (python_numbers); a body the step edits
            # too is not the one it would trace.
            order = ("float32", "float64") if dtype == "float32" else ("int32", "int64")
            found, said = ctx.tensor_dtype(path, order)
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
                "tensor-argument",
                f"pass {path} as one {dtype} tensor (its "
                + ("length" if path in resized else "numbers") + " can then vary)" + body_note(body, ctx)
                + missing_note(missing),
                code,
                edits,
                state.map_calls(reached(new, calls, missing)),
                tf_check=checked,
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
        # The body only sums the list (tf.add_n): the stacked tensor sums to the same value.
        return Candidate(
            "structure-changed",
            "tensor-argument",
            f"pass {ctx.tf}.stack({path}) (one {first.dtype} tensor whose length can vary) and sum it with "
            f"{ctx.tf}.reduce_sum({path}, axis=0) in {ctx.short}'s body instead of {ctx.tf}.add_n({path})",
            preview(ctx, (body,), edits),
            (body, *edits),
            moved,
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


def dict_keys(ctx: FunctionContext, state: State) -> list[Candidate]:
    """A dict that sometimes lacks a key: always pass every key (advice: what to pass is the user's call)."""
    out: list[Candidate] = []
    calls = state.replay.calls
    for path in varying_paths(calls, "dict"):
        heads = [leaf for c in calls for leaf in c.signature if leaf.path == path]
        if any(h.kind != "dict" for h in heads):
            continue
        widest = max(calls, key=lambda c: sum(1 for leaf in c.signature if leaf.path.startswith(path + "[")))
        full = tuple(leaf for leaf in widest.signature if leaf.path == path or leaf.path.startswith(path + "["))
        keys = [leaf.path[len(path) :] for leaf in full if leaf.path.count("[") == path.count("[") + 1]
        new = {}
        for c in calls:
            have = {leaf.path for leaf in c.signature}
            if all(leaf.path in have for leaf in full):
                continue
            rest = [leaf for leaf in c.signature if not (leaf.path == path or leaf.path.startswith(path + "["))]
            at = next(i for i, leaf in enumerate(c.signature) if leaf.path == path)
            new[c.index] = replace(c, signature=(*rest[:at], *full, *rest[at:]))
        if not new:
            continue
        moved = state.map_calls(dict(new))
        out.append(
            Candidate(
                "structure-changed",
                "advice",
                f"always pass {path} with the same keys ({', '.join(keys)}): a key present on some calls and "
                "absent on others is a new structure; pass a neutral value (e.g. an all-ones mask) instead",
                None,
                (),
                replace(moved, signature_advice=True),
            )
        )
    return out


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
        out.append(
            Candidate(
                "variable-spec-changed",
                "tensor-argument",
                f"pass {path} as a tensor ({ctx.short} only reads it): variables differ in trainable flag or "
                "aliasing, tensors of one shape do not" + missing_note(missing),
                ctx.reader.preview(edits) or f"{ctx.short}(..., {path}={ctx.tf}.convert_to_tensor({path}))",
                edits,
                state.map_calls(reached(new, calls, missing)),
            )
        )
    return out


def _zero_edits(
    ctx: FunctionContext, calls: tuple[Call, ...], path: str, template: str
) -> tuple[tuple[Replacement, ...], list[str]]:
    edits: list[Replacement] = []
    missing: list[str] = []
    for site in ctx.sites(calls):
        info = ctx.call_info(site)
        found = None if info is None else info.arg(path)
        # The zeros are written in the call's file, in its own name for tensorflow; a file with
        # none would call whatever `tf` is there: left to the user.
        alias = None if found is None else ctx.reader.tf_alias(found[2].path)
        if found is None or alias is None:
            missing.append(site)
            continue
        zeros = template.format(tf=alias)
        expr = found[1].strip()
        if expr == "None":
            edits.append(Replacement(found[2], zeros))
            continue
        span = ctx.reader.none_assignment(found[2].path, expr, found[2].line + 1)
        if span is None:
            missing.append(site)
        elif all(e.span != span for e in edits):
            edits.append(Replacement(span, zeros))
    return tuple(edits), missing


def _dtype_family(dtype: str | None) -> str:
    return "number" if dtype is not None and dtype != "string" and dtype != "variant" else str(dtype)


def swap_leaf(signature: tuple[Leaf, ...], path: str, leaf: Leaf) -> tuple[Leaf, ...]:
    return tuple(replace(leaf, path=path) if x.path == path else x for x in signature)


def preview(ctx: FunctionContext, body: tuple[Replacement, ...], edits: tuple[Replacement, ...]) -> str | None:
    # The body's lines and the call sites' apart: one preview would show every line between them.
    parts = [ctx.reader.preview(group) for group in (body, edits) if group]
    return "\n".join(p for p in parts if p) or None


def reached(new: dict[int, Call], calls: tuple[Call, ...], missing: list[str]) -> dict[int, Call | None]:
    """The changed calls the edits reach: a call at a site left to be edited by hand keeps its arguments."""
    at = {c.index: c.site for c in calls}
    return {index: call for index, call in new.items() if at.get(index) not in missing}


def missing_note(missing: list[str]) -> str:
    return "" if not missing else f" (no mechanical edit at {', '.join(missing)}: edit by hand)"
