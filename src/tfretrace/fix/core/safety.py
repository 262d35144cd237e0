"""Each fix kind's safety class (safe, unsafe, advice), the argument for it, and the check that decides a step's class.

As ruff classes its fixes: a **safe** edit leaves what the program computes the same for every
input the original accepted; ``tfretrace fix --apply`` writes only these. An **unsafe** edit may
change results or behaviour in a case tfretrace cannot rule out; each such step says which (its
``unsafe_reason``), and ``--unsafe-fixes`` writes it. **Advice** is made by hand.

The class is declared once per kind, in ``KINDS``. A kind that is safe only under conditions
(a move out of a loop) is checked by ``move_checks``; a kind whose conditions tfretrace cannot
check (a Python number passed as a tensor: the body may mix it with another dtype) is unsafe.
A step whose function draws random numbers is unsafe whatever its kind: fewer traces draw
other numbers. The table is also the catalogue's source (docs/fix-catalogue.md).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tfretrace.fix.core import move_checks
from tfretrace.fix.core.source import Replacement, SourceReader

SAFE = "safe"
UNSAFE = "unsafe"
ADVICE = "advice"
SAFETIES = (SAFE, UNSAFE, ADVICE)


# A generalized signature that TensorFlow traced with the same outputs (the step's ``checked``).
TF_CHECKED = "tensorflow"


@dataclass(frozen=True)
class KindSafety:
    """A kind's class: ``never_safe`` is the reason it is unsafe, None where its checks can prove it safe.

    ``probed``: safe only where TensorFlow traced the generalized signature with the outputs of
    every trace of the run (``never_safe`` is then the reason where it did not or could not).
    ``maker_checks``: safe only where the conditions its maker reads hold (keras-pad-rows: the
    model computes each row alone, read while predict ran).
    """

    never_safe: str | None
    argument: str
    probed: bool = False
    # Safe where the conditions its maker checked hold (the candidate's ``condition`` says why not).
    maker_checks: bool = False
    # A kind TensorFlow checks without making it safe (a Python value made a tensor of the dtype
    # TensorFlow traced): why such a checked step is still unsafe.
    checked_unsafe: str | None = None


_GENERALIZES = (
    "the body sees None where each call had a size, and a dimension constant in this run is pinned: "
    "code reading a static shape (x.shape[1], tf.random.normal(shape=x.shape)) may fail or take another "
    "branch, and a call of another size is refused; TensorFlow did not trace the open signature (no live "
    "function to probe)"
)

# A Python number or bool made a tensor of the dtype TensorFlow traced the body with: what a trace
# cannot show. TensorFlow checked the graph, not what the body's Python does with the value.
_STILL_UNSAFE = (
    "TensorFlow traced the body with it as a tensor of this dtype, to the outputs of every trace of this run, "
    "but the body's trace-time Python now sees a symbolic tensor, once, instead of each value (print, "
    "isinstance and `is None` tests, Python arithmetic done in double precision before the graph saw a "
    "constant: floating-point results may differ in the last digits), and a value outside the dtype's range "
    "fails at the call site"
)

KINDS: dict[str, KindSafety] = {
    "neutral-key": KindSafety(
        None,
        "the key's entry is ones of the recorded dtype and shape, and the body's only use of it is "
        "`x = x * d[key]` under `if key in d`: multiplying by ones gives the same values",
    ),
    "hoist-def": KindSafety(
        None,
        "the def closes over nothing of its outer function; safe only where every module name it reads "
        "(and the module defs it calls read) is an import, a def, a class whose attributes are never "
        "assigned, or a constant bound once, the file has no `global`, and no `del` removes it",
    ),
    "hoist-wrap": KindSafety(
        None,
        "the tf.function(f) reads nothing the loop binds; safe only where f's module reads cannot change "
        "between passes (as hoist-def) and the loop never deletes the name",
    ),
    "hoist-factory-call": KindSafety(
        None,
        "the factory only makes the tf.function and is called with constants; safe only where the def's "
        "module reads cannot change between passes (a class attribute the loop anneals can) and no `del` "
        "removes the name",
    ),
    "hoist-object": KindSafety(
        None,
        "the class's __init__ only stores constant arguments; safe only where the loop uses the object "
        "only as the function's argument (no helper, method call or setattr changes it) and never deletes it",
    ),
    "hoist-pipeline": KindSafety(
        None,
        "the pipeline reads nothing the loop binds; safe only where it draws no random numbers (shuffle "
        "reshuffles each iteration of one dataset) and its map functions read no state a pass changes",
    ),
    "wrap-vectorized-map": KindSafety(
        None,
        "the wrapper is traced once per input signature; safe only where fn is a def bound once at module "
        "level (a loop variable would be frozen at its first value) whose reads cannot change between calls",
    ),
    "saved-signature": KindSafety(None, "no edit of its own: as safe as the saving function's signature step"),
    "input-signature": KindSafety(
        _GENERALIZES,
        "every dimension open, and TensorFlow traced the body with that signature (a fresh tf.function of "
        "the same Python function, in the recorded run) to outputs of the structure, dtypes and ranks of every "
        "trace of the run, each static size open or the same: it accepts every input the original did",
        probed=True,
    ),
    "element-spec": KindSafety(
        "the body sees the distributed dataset's spec, open where its batches vary (the batch dimension): code "
        "reading a static size there may fail or take another branch; TensorFlow did not trace the function with "
        "it (no live function to probe)",
        "the distributed dataset's own spec, bound once at module level, and TensorFlow traced the body with it "
        "(a fresh tf.function of the same Python function, in the recorded run) to outputs of the structure, "
        "dtypes and ranks of every trace of the run: every batch the dataset yields is accepted",
        probed=True,
    ),
    "reduce-retracing": KindSafety(
        "TensorFlow traces with None dimensions after a shape changes: code reading a static shape may "
        "fail or take another branch",
        "TensorFlow's own relaxation of shapes",
    ),
    "tensor-argument": KindSafety(
        "a Python value becomes a tensor of the dtype tfretrace chose: where the body mixes it with data of "
        "another dtype (a float32 tensor times float64 data, an int32 step / 10) TensorFlow refuses or "
        "computes in another dtype (TensorFlow did not trace it: no live module-level function to probe), "
        "and a variable passed as a tensor no longer aliases it",
        "one graph for every value",
        checked_unsafe=_STILL_UNSAFE,
    ),
    "cast-dtype": KindSafety("the data is computed in the cast dtype", "one dtype, one graph"),
    "zero-state": KindSafety(
        "None becomes zeros: where the body's None branch starts from something else (ones, a learned "
        "state) the results change",
        "one structure for every call",
    ),
    "drop-remainder": KindSafety("the partial last batch is skipped: its examples are not computed", "one batch shape"),
    "keras-pad-rows": KindSafety(
        None,
        "predict's NumPy inputs padded on the rows only (the last row repeated) to full batches, every output cut "
        "back to the rows given; safe only where, read while predict ran, the model is Keras' own Sequential or "
        "Functional of layers that compute each row alone (no custom layer, Lambda, stateful RNN or "
        "training=True; one step per execution) and every input was NumPy arrays; any other input goes to "
        "predict as it was",
        maker_checks=True,
    ),
    "keras-call": KindSafety(
        "model(x, training=False) is not Model.predict: a model overriding predict_step returns other values, a "
        "model with several outputs gives a list, and a large input is computed in one batch (more memory)",
        "no predict function to trace",
    ),
}


def kind_floor(kind: str, checked: str | None = None) -> str | None:
    """Why a kind is unsafe whatever a session file says (None: its steps' recorded class stands).

    ``checked``: the step says TensorFlow traced its generalized signature (probed kinds only).
    """
    found = KINDS.get(kind)
    if found is None:
        return f"tfretrace has no safety argument for the kind {kind!r}"
    if found.probed and checked == TF_CHECKED:
        return None
    return found.never_safe


def classify(
    kind: str,
    edits: tuple[Replacement, ...],
    reader: SourceReader,
    *,
    names: tuple[str, ...] = (),
    traced: ast.FunctionDef | ast.AsyncFunctionDef | None = None,
    random: str | None = None,
    tf_check: str | None = None,
    condition: str | None = None,
) -> tuple[str, str | None]:
    """A step's class and, for an unsafe one, why: ``(safety, unsafe_reason)``.

    ``names``: the names the function is called by (an object made once must only be passed to
    them); ``traced``: the def its traces run; ``random``: a random draw in its body; ``tf_check``:
    what TensorFlow said of a generalized signature (TF_CHECKED, or why it differs); ``condition``:
    for a kind whose maker checks its conditions, why they do not hold (None: they do).
    """
    if not edits and kind != "saved-signature":
        return ADVICE, None
    floor = kind_floor(kind, tf_check)
    if floor is not None:
        found = KINDS.get(kind)
        if found is not None and found.probed and tf_check:
            return UNSAFE, tf_check  # what TensorFlow said of the generalized signature
        if found is not None and found.checked_unsafe is not None and tf_check == TF_CHECKED:
            return UNSAFE, found.checked_unsafe
        return UNSAFE, floor
    if random is not None:
        return UNSAFE, f"the body draws random numbers ({random}): fewer traces draw other numbers"
    if kind in KINDS and KINDS[kind].maker_checks:
        return (SAFE, None) if condition is None else (UNSAFE, condition)
    reason = _move_reason(kind, edits, reader, names, traced)
    return (SAFE, None) if reason is None else (UNSAFE, reason)


def _move_reason(
    kind: str,
    edits: tuple[Replacement, ...],
    reader: SourceReader,
    names: tuple[str, ...],
    traced: ast.FunctionDef | ast.AsyncFunctionDef | None,
) -> str | None:
    if kind in ("neutral-key", "saved-signature") or (kind in KINDS and KINDS[kind].probed):
        return None
    if kind == "wrap-vectorized-map":
        return _vectorized_reason(edits, reader)
    found = move_checks.move_scope(reader, edits)
    if found is None:
        return "tfretrace could not find the loop the statement leaves to check it"
    tree, scope, moved = found
    deleted = move_checks.deleted_in(scope, move_checks.names_bound(moved))
    if deleted is not None:
        return deleted
    if kind == "hoist-object":
        (bound,) = move_checks.names_bound(moved) or {""}
        return move_checks.only_passed_to(scope, bound, names)
    if kind == "hoist-pipeline":
        return move_checks.pipeline_risk(tree, moved)
    function = _traced_def(tree, kind, moved, traced)
    if function is None:
        return "tfretrace could not find the def the moved tf.function traces"
    return move_checks.frozen_reads(tree, function)


def _traced_def(
    tree: ast.Module, kind: str, moved: ast.stmt, traced: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    if kind == "hoist-def" and isinstance(moved, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return moved
    if traced is None:
        return None
    # The def as this module's tree has it (the reader's tree), found by place.
    return next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
         and (n.lineno, n.name) == (traced.lineno, traced.name)),
        None,
    )


def _vectorized_reason(edits: tuple[Replacement, ...], reader: SourceReader) -> str | None:
    wrapper = next((e for e in edits if e.text.startswith("@")), None)
    parsed = reader.module(edits[0].span.path) if edits else None
    if wrapper is None or parsed is None:
        return "tfretrace could not read the wrapper it writes"
    tree = parsed[1]
    call = next((n for n in ast.walk(ast.parse(wrapper.text)) if isinstance(n, ast.Call) and len(n.args) == 2), None)
    fn = call.args[0] if call is not None else None
    if not isinstance(fn, ast.Name):
        return "tfretrace could not read the function the wrapper maps"
    found = move_checks.module_def(tree, fn.id)
    if found is None:
        return (
            f"{fn.id} is not a def bound once at module level (a loop variable, say): the wrapper, traced once, "
            f"would keep the first function {fn.id} named"
        )
    return move_checks.frozen_reads(tree, found)
