"""Fix kind cast-dtype: a tensor whose dtype varies, cast to one dtype at the call site; maker, anchors, class."""

from __future__ import annotations

from dataclasses import replace

from tfretrace.fix.core.anchor_base import call_argument
from tfretrace.fix.core.call_edits import missing_note, reached
from tfretrace.fix.core.candidate import Candidate, FunctionContext, State, varying_paths
from tfretrace.fix.core.kind import CHANGES_DTYPE, Kind, Maker, Row
from tfretrace.fix.core.safety import KindSafety
from tfretrace.fix.core.specs import is_top
from tfretrace.records.events import TENSOR

NAME = "cast-dtype"


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
                NAME,
                f"cast {path} to {target} at the call site ({', '.join(sorted(set(map(str, seen))))} seen)"
                + missing_note(missing),
                code,
                edits,
                state.map_calls(reached(new, calls, missing)),
            )
        )
    return out


def _dtype_family(dtype: str | None) -> str:
    return "number" if dtype is not None and dtype != "string" and dtype != "variant" else str(dtype)


# The kind as the registry (fix.kinds) lists it: its class with the argument, and its anchor check.
KIND = Kind(
    NAME,
    KindSafety("the data is computed in the cast dtype", "one dtype, one graph"),
    check=call_argument("cast"),
    row=Row(
        "unsafe",
        "the data is computed in the cast dtype",
    ),
    changes=CHANGES_DTYPE,
    call_sites=True,
    position=140,
    makers=(Maker(dtypes, 20, call_sites=True),),
)
