"""The pure explanation logic on hand-built signatures (no TensorFlow needed)."""

from __future__ import annotations

import pytest

from tfretrace.explain.analyzer import Prior, closest, explain
from tfretrace.explain.diff import diff_signatures
from tfretrace.records import catalogue
from tfretrace.records.events import Leaf


def t(path: str, *shape: int | None, dtype: str = "float32") -> Leaf:
    return Leaf(path, "tensor", dtype=dtype, shape=tuple(shape))


def py(path: str, value: object) -> Leaf:
    return Leaf(path, "python", value=repr(value), type_name=type(value).__name__)


def prior(index: int, *leaves: Leaf, token: int = 1, context: tuple[tuple[str, str], ...] = ()) -> Prior:
    return Prior(index, token, leaves, context)


def test_unknown_dims_cover_new_values_like_tensorflow_subtyping() -> None:
    assert diff_signatures([t("x", None, 10)], [t("x", 7, 10)]) == []
    assert diff_signatures([Leaf("x", "tensor", dtype="float32", shape=None)], [t("x", 1, 2)]) == []
    (change,) = diff_signatures([t("x", 10, 20)], [t("x", 10, 21)])
    assert (change.kind, change.detail) == ("shape", "dim 1")
    (change,) = diff_signatures([t("x", 3)], [t("x", 3, 2)])
    assert change.kind == "rank"


def test_container_change_hides_its_children_and_counts_them() -> None:
    before = [Leaf("s", "list", value="of len 2", type_name="list"), t("s[0]", 1), t("s[1]", 1)]
    after = [Leaf("s", "list", value="of len 3", type_name="list"), t("s[0]", 1), t("s[1]", 1), t("s[2]", 1)]
    assert [(c.path, c.kind) for c in diff_signatures(before, after)] == [("s", "structure")]
    # A prior with the same structure and two dtype changes is closer than a structural change.
    same_structure = prior(2, *[Leaf("s", "list", value="of len 3", type_name="list")] + [
        t(f"s[{i}]", 1, dtype="float64") for i in range(3)
    ])
    best, changes, _ = closest(after, (), [prior(1, *before), same_structure])
    assert [p.index for p in best] == [2]
    assert {c.kind for c in changes} == {"dtype"}


@pytest.mark.parametrize(
    ("before", "after", "cause"),
    [
        ([t("x", 2)], [t("x", 3)], "shape-changed"),
        ([t("x", 2)], [t("x", 2, dtype="float64")], "dtype-changed"),
        ([py("lr", 0.1)], [py("lr", 0.2)], "python-value-changed"),
        ([py("mode", "a")], [py("mode", 1)], "python-value-changed"),
        ([py("x", 1)], [t("x")], "structure-changed"),
        (
            [Leaf("cfg", "object", value="<C at 0x1>", type_name="C", ident=1, alive=True)],
            [Leaf("cfg", "object", value="<C at 0x2>", type_name="C", ident=2, alive=True)],
            "object-identity",
        ),
        # Several kinds at once: the one reduce_retracing cannot generalize wins.
        ([t("x", 2), py("n", 1)], [t("x", 3), py("n", 2)], "python-value-changed"),
    ],
)
def test_cause_of_each_change_kind(before: list[Leaf], after: list[Leaf], cause: str) -> None:
    explanation = explain(1, after, (), [prior(1, *before)])
    assert explanation.cause == cause
    assert cause in catalogue.RUNTIME_SLUGS


def test_new_object_context_and_unexplained() -> None:
    sig = [t("x", 2)]
    assert explain(1, sig, (), []).cause == "first-trace"
    assert explain(2, sig, (), [prior(1, *sig, token=1)]).cause == "new-function-object"
    var_ctx = (("scope_type", "VARIABLE_CREATION"),)
    no_var = (("scope_type", "NO_VARIABLE_CREATION"),)
    assert explain(1, sig, no_var, [prior(1, *sig, context=var_ctx)]).cause == "variable-creation"
    device = explain(1, sig, (("device", "/cpu:1"),), [prior(1, *sig, context=(("device", "/cpu:0"),))])
    assert device.cause == "context-changed"
    assert explain(1, sig, (), [prior(1, *sig)]).cause == "unexplained"


def test_ties_are_all_returned_newest_first() -> None:
    best, _, _ = closest([t("x", 2), t("y", 2)], (), [prior(1, t("x", 1), t("y", 2)), prior(2, t("x", 2), t("y", 1))])
    assert [p.index for p in best] == [2, 1]


def test_an_earlier_object_that_died_never_matches_even_at_the_same_address() -> None:
    import weakref

    class Cfg:
        pass

    alive = Cfg()
    leaf = Leaf("cfg", "object", value="<Cfg at 0x1>", type_name="Cfg", ident=1, alive=True)
    gone = Cfg()
    dead_ref = weakref.ref(gone)
    del gone
    live = Prior(1, 1, (leaf,), (), refs=(("cfg", weakref.ref(alive)),))
    dead = Prior(1, 1, (leaf,), (), refs=(("cfg", dead_ref),))
    assert live.as_seen_now() is live
    explanation = explain(1, [leaf], (), [dead.as_seen_now()])
    assert explanation.cause == "object-identity"
    assert "garbage-collected" in explanation.changes[0].detail


def test_expected_per_replica_trace_is_not_a_retrace_anywhere() -> None:
    from tfretrace.records.events import TraceEvent
    from tfretrace.records.function_report import FunctionReport
    from tfretrace.render import _model

    def event(index: int, cause: str, expected: bool) -> TraceEvent:
        return TraceEvent(index, cause, 0.01, float(index), "t.py:1", (t("x", 2),), expected=expected)

    report = FunctionReport(
        "inner", "t.py:1", 2, 2, 0.02, 1, (event(1, "first-trace", True), event(2, "context-changed", True))
    )
    assert report.retraces == 0 and report.main_cause is None
    assert _model.causes_of(report) == []
    assert not any(e.is_retrace for e in report.events)
    assert event(3, "context-changed", False).is_retrace


def test_ties_prefer_the_trace_whose_difference_is_new() -> None:
    def var(shape: tuple[int, ...], alias: str) -> Leaf:
        return Leaf("v", "variable", dtype="float32", shape=shape,
                    extra=(("alias_id", alias), ("trainable", "True")))

    # Variables (1,), (2,), then a new variable of shape (1,): shape (1,) was traced before,
    # the variable's identity never was; the third is a variable change from #1, not a shape one.
    priors = [Prior(1, 1, (var((1,), "1"),), ()), Prior(2, 1, (var((2,), "2"),), ())]
    result = explain(1, (var((1,), "3"),), (), priors)
    assert (result.cause, result.closest[0]) == ("variable-spec-changed", 1)
    tensor = [Prior(1, 1, (Leaf("x", "tensor", dtype="float32", shape=(2,)),), ()),
              Prior(2, 1, (Leaf("x", "tensor", dtype="int32", shape=(2,)),), ())]
    result = explain(1, (Leaf("x", "tensor", dtype="float32", shape=(3,)),), (), tensor)
    assert (result.cause, result.closest) == ("shape-changed", (1, 2))


def test_values_that_differ_only_past_the_shown_text_are_a_change() -> None:
    def path(digest: str) -> Leaf:
        return Leaf("path", "python", value="'/data/...ckpt'", type_name="str",
                    extra=(("repr_hash", digest),))

    result = explain(1, (path("bb"),), (), [Prior(1, 1, (path("aa"),), ())])
    assert result.cause == "python-value-changed" and [c.path for c in result.changes] == ["path"]
