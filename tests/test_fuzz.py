"""Property-based attacks: the analyzer's diff on random signatures, session loading on random JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sessions as S
from tfretrace.explain.analyzer import Prior, explain
from tfretrace.explain.diff import diff_leaf, diff_signatures
from tfretrace.records import catalogue
from tfretrace.records.events import Leaf
from tfretrace.records.session import Session, SessionFormatError
from tfretrace.render import HtmlRenderer, JsonRenderer, TextRenderer

# Matrix rows leave it out (tools/matrix.py): session loading and the analyzer: pure Python.
pytestmark = pytest.mark.single_env

# Bounded so the suite stays a few seconds on a loaded 2-core CI machine.
FAST = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])

# -- random signatures -----------------------------------------------------------------------

PATHS = ["x", "y", "x[0]", "x[1]", "x['a']", "x.f", "x[0][0]", "y.g", "z", "z#2"]
dims = st.one_of(st.none(), st.integers(0, 4))
shapes = st.one_of(st.none(), st.lists(dims, max_size=3).map(tuple))
texts = st.text(max_size=6)


@st.composite
def leaves(draw: st.DrawFn, path: str) -> Leaf:
    kind = draw(st.sampled_from(["tensor", "variable", "python", "object", "spec", "list", "tuple",
                                 "dict", "namedtuple", "attrs", "strange"]))
    if kind in ("tensor", "variable"):
        extra = draw(st.sampled_from([(), (("alias_id", "1"), ("trainable", "True")),
                                      (("alias_id", "2"), ("trainable", "True"))]))
        return Leaf(path, kind, dtype=draw(st.sampled_from(["float32", "int32"])), shape=draw(shapes),
                    extra=extra if kind == "variable" else ())
    if kind == "python":
        extra = draw(st.sampled_from([(), (("repr_hash", "ab"),), (("repr_hash", "cd"),)]))
        return Leaf(path, kind, value=draw(texts), type_name=draw(st.sampled_from(["int", "str"])),
                    extra=extra)
    if kind == "object":
        return Leaf(path, kind, value=draw(texts), type_name="Thing", ident=draw(st.integers(1, 3)),
                    alive=draw(st.booleans()))
    if kind == "spec":
        return Leaf(path, kind, dtype=draw(st.sampled_from([None, "float32", "int32"])),
                    shape=draw(shapes), value=draw(texts),
                    type_name=draw(st.sampled_from(["RaggedTensorSpec", "SparseTensorSpec"])))
    return Leaf(path, kind, value=f"of len {draw(st.integers(0, 2))}", type_name=kind)


@st.composite
def signatures(draw: st.DrawFn) -> tuple[Leaf, ...]:
    paths = draw(st.lists(st.sampled_from(PATHS), unique=True, max_size=6))
    return tuple(draw(leaves(p)) for p in paths)


def _under(path: str, prefix: str) -> bool:
    return len(path) > len(prefix) and path.startswith(prefix) and path[len(prefix)] in "[."


@FAST
@given(before=signatures(), after=signatures())
@example(
    before=(Leaf("x", "strange", value="of len 0", type_name="strange"),),
    after=(Leaf("x", "strange", value="of len 1", type_name="strange"), Leaf("x[0]", "tensor", dtype="float32")),
)
def test_diff_has_a_change_line_for_every_differing_leaf(before: tuple[Leaf, ...],
                                                         after: tuple[Leaf, ...]) -> None:
    changes = diff_signatures(before, after)
    lines = [c.line() for c in changes]  # every change renders
    assert all(isinstance(line, str) and line for line in lines)
    old, new = {leaf.path: leaf for leaf in before}, {leaf.path: leaf for leaf in after}
    changed = {c.path: c for c in changes}
    # A leaf whose structure or kind changed explains the leaves under it: they are not listed
    # again. That holds for a kind the analyzer does not know too (a "strange" leaf of len 0 that
    # now has an x[0] under it), which the matrix rows' random draws found.
    broken = [c.path for c in changes if c.kind in ("structure", "leaf-kind")]
    for path in old.keys() | new.keys():
        if any(_under(path, b) for b in broken):
            continue
        if path not in old:
            assert changed[path].kind == "added"
        elif path not in new:
            assert changed[path].kind == "removed"
        elif diff_leaf(old[path], new[path]) is not None:
            assert path in changed, (old[path], new[path])
        else:
            assert path not in changed


@FAST
@given(current=signatures(), priors=st.lists(signatures(), max_size=5), token=st.integers(0, 2),
       tokens=st.lists(st.integers(0, 2), min_size=5, max_size=5),
       contexts=st.lists(st.sampled_from([(), (("device", "cpu"),), (("device", "gpu"),)]), min_size=6,
                         max_size=6))
def test_explain_never_raises_and_names_a_catalogued_cause(
    current: tuple[Leaf, ...], priors: list[tuple[Leaf, ...]], token: int, tokens: list[int],
    contexts: list[tuple[tuple[str, str], ...]],
) -> None:
    earlier = [Prior(i + 1, tokens[i], sig, contexts[i]) for i, sig in enumerate(priors)]
    result = explain(token, current, contexts[5], earlier)
    assert catalogue.get(result.cause).slug == result.cause
    assert set(result.closest) <= {p.index for p in earlier}
    if earlier and result.cause not in ("first-trace", "unexplained", "new-function-object"):
        assert result.changes  # a named cause always says what changed
    for change in result.changes:
        assert change.line()


@FAST
@given(st.lists(st.tuples(st.sampled_from(["x", "x[0]", "x[nan]"]), leaves("x")), max_size=6),
       st.lists(st.tuples(st.sampled_from(["x", "x[0]", "x[nan]"]), leaves("x")), max_size=6))
def test_duplicate_paths_never_raise(first: list[tuple[str, Leaf]], second: list[tuple[str, Leaf]]) -> None:
    before = tuple(Leaf(**{**leaf.__dict__, "path": p}) for p, leaf in first)
    after = tuple(Leaf(**{**leaf.__dict__, "path": p}) for p, leaf in second)
    explain(1, after, (), [Prior(1, 1, before, ())])
    diff_signatures(before, after)


# -- random JSON into the session loader -------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
STEP = {
    "cause": "shape-changed", "kind": "signature", "summary": "declare the varying dimension",
    "code": "@tf.function(reduce_retracing=True)",
    "edits": [{"path": "train.py", "line": 3, "col": 0, "end_line": 3, "end_col": 12,
               "text": "@tf.function(reduce_retracing=True)"}],
    "traces_before": 120, "traces_after": 1, "seconds_saved": 1.5, "verified": None, "final": True,
}


def _valid() -> dict[str, Any]:
    data = S.mixed_session().to_dict()
    data["functions"][0]["plan"] = [STEP, {**STEP, "kind": "statement", "edits": []}]
    return data


VALID = _valid()


def _check_loads_or_one_line(data: Any) -> None:
    try:
        session = Session.from_dict(data, "fuzz.json")
    except SessionFormatError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("fuzz.json: ")
        return
    # Whatever loads renders in every format and saves again.
    TextRenderer(width=100, color=True).render(session).encode("utf-8")
    HtmlRenderer().render(session).encode("utf-8")
    again = json.loads(JsonRenderer().render(session))
    assert Session.from_dict(again).to_dict() == again


@FAST
@given(json_values)
def test_random_json_loads_or_fails_in_one_line(data: Any) -> None:
    _check_loads_or_one_line(data)


@st.composite
def mutated_sessions(draw: st.DrawFn) -> Any:
    """The valid session with one value somewhere inside replaced by random JSON."""
    data = json.loads(json.dumps(VALID))
    holder: Any = data
    while True:
        keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        child = holder[key]
        if isinstance(child, (dict, list)) and child and draw(st.booleans()):
            holder = child
            continue
        holder[key] = draw(json_values | st.sampled_from([1e400, -1, 2**70, True, "\ud800", "\x1b[2J"]))
        break
    return data


@settings(max_examples=250, deadline=3000, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_sessions())
def test_mutated_sessions_load_or_fail_in_one_line(data: Any) -> None:
    _check_loads_or_one_line(data)


def _records(data: Any) -> list[dict[str, Any]]:
    """Every JSON object inside the session: functions, events, leaves, changes, plan steps, edits."""
    found = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


HOSTILE_VALUES = st.sampled_from([1e400, -1e400, float("nan"), -1, 2**70, True, None, "", "\ud800",
                                  "\x1b]52;c;eA==\x07", [], {}, [[]], 0.5, "12"])


@st.composite
def mutated_records(draw: st.DrawFn) -> Any:
    """The valid session with one field of any record (however deep) set to a hostile value."""
    data = json.loads(json.dumps(VALID))
    # Pick the kind of record first (by its keys): a session holds far more leaves than plan steps.
    kinds: dict[frozenset[str], list[dict[str, Any]]] = {}
    for item in _records(data):
        kinds.setdefault(frozenset(item), []).append(item)
    group = kinds[draw(st.sampled_from(sorted(kinds, key=sorted)))]
    record = draw(st.sampled_from(group))
    if record:
        record[draw(st.sampled_from(sorted(record)))] = draw(HOSTILE_VALUES | json_values)
    return data


def _with_empty_edit() -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    data["functions"][0]["plan"][0]["edits"] = [{}]
    return data


@settings(max_examples=300, deadline=3000, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_records())
# Found by this test: an edit emptied to {} loaded, and the session saved again broke the schema.
@example(_with_empty_edit())
def test_any_field_of_any_record_loads_or_fails_in_one_line(data: Any) -> None:
    _check_loads_or_one_line(data)


def test_an_incomplete_edit_fails_the_load_naming_what_it_lacks() -> None:
    data = copy.deepcopy(VALID)
    data["functions"][0]["plan"][0]["edits"] = [{"path": "train.py", "text": "x"}]
    with pytest.raises(SessionFormatError) as info:
        Session.from_dict(data, "fuzz.json")
    assert "functions[0].plan[0].edits[0]" in str(info.value)
    assert "lacks line, col, end_line, end_col" in str(info.value)


@pytest.mark.parametrize("document", ["[" * 50_000, "9" * 5000, '{"a": NaN}', "\ud800"])
def test_pathological_documents(document: str, tmp_path: Any) -> None:
    from tfretrace.records.session import load

    path = tmp_path / "s.json"
    path.write_text(document, encoding="utf-8", errors="surrogatepass")
    with pytest.raises(SessionFormatError) as info:
        load(path)
    assert "\n" not in str(info.value)
