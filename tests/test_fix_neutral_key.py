"""The neutral-key edit: a mask key some calls leave out, filled with ones only where that keeps the result."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sessions import event, tensor
from tfretrace.fix.applying.anchors import AnchorError, anchors_for, check_step
from tfretrace.fix.core.source import Replacement, SourceReader
from tfretrace.fix.planning.plan import plan_for
from tfretrace.records.events import Change, Leaf
from tfretrace.records.function_report import FunctionReport

SAFE_BODY = (
    "    values = features['values']\n"
    "    if 'mask' in features:\n"
    "        values = values * features['mask']\n"
    "    return tf.reduce_mean(values)\n"
)

CALLS = (
    "values = tf.ones([2, 3])\n"
    "masked_mean({'values': values})\n"  # 4
    "masked_mean({'values': values, 'mask': tf.ones([2, 3])})\n"  # 5
)


def program(body: str) -> str:
    # The calls on lines 4 and 5, the def on line 9, whatever the body: only the body differs.
    return "import tensorflow as tf\n\n" + CALLS + "\n\n@tf.function\ndef masked_mean(features):\n" + body


def head(*keys: str) -> Leaf:
    return Leaf("features", "dict", value=f"with keys {list(keys)!r}", type_name="dict")


def report(dtype: str = "float32") -> FunctionReport:
    plain = (head("values"), tensor("features['values']", 2, 3, dtype=dtype))
    masked = (*plain[:1], head("values", "mask"), *plain[1:], tensor("features['mask']", 2, 3, dtype=dtype))[1:]
    change = Change("features", "structure", "dict with keys ['values']", "dict with keys ['values', 'mask']", "")
    events = (
        event(1, "first-trace", time=0.1, calls_total=1, signature=plain),
        event(2, "structure-changed", time=0.2, calls_total=2, signature=masked, changes=(change,)),
    )
    events = tuple(replace(e, call_site=f"prog.py:{4 + i}") for i, e in enumerate(events))
    return FunctionReport(name="masked_mean", location="prog.py:9", calls=2, traces=2, trace_seconds=0.02,
                          objects=1, events=events)


def kinds(tmp_path: Path, body: str, dtype: str = "float32") -> list[str]:
    (tmp_path / "prog.py").write_text(program(body))
    return [s.kind for s in plan_for(report(dtype), SourceReader(tmp_path))]


def test_a_mask_only_multiplied_in_is_filled_with_ones_and_one_trace_is_predicted(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(program(SAFE_BODY))
    steps = plan_for(report(), SourceReader(tmp_path))
    assert [(s.kind, s.by, s.traces_before, s.traces_after) for s in steps] == [("neutral-key", "tfretrace", 2, 1)]
    (edit,) = steps[0].edits
    assert (edit.span.line, edit.text) == (4, "{'values': values, \"mask\": tf.ones_like(values)}")


@pytest.mark.parametrize(
    "body",
    [
        # an else branch does something else when the key is absent
        SAFE_BODY.replace("    return", "    else:\n        values = values * 2.0\n    return"),
        # added, not multiplied: ones would change the sum
        SAFE_BODY.replace("values * features['mask']", "values + features['mask']"),
        # the mask multiplies something other than the values it has the shape of
        SAFE_BODY.replace("values * features['mask']", "tf.reduce_sum(values) * features['mask']"),
        # the values are reshaped before the mask: ones of their old shape would broadcast
        SAFE_BODY.replace("    if", "    values = tf.reduce_sum(values, axis=0)\n    if"),
        # the dict itself is read another way: its length differs with the key
        SAFE_BODY.replace("return tf.reduce_mean(values)", "return tf.reduce_mean(values) * len(features)"),
        # the guard does more than multiply (a second guard changing what is returned)
        SAFE_BODY.replace("    return", "    if 'mask' in features:\n        return tf.reduce_sum(values)\n    return"),
        SAFE_BODY.replace("values * features['mask']\n", "values * features['mask']\n        tf.print(values)\n"),
        # the values rebound in a nested function's own scope, where a broadcast mask would double a sum
        "    values = features['values']\n    def inner(values):\n        if 'mask' in features:\n"
        "            values = values * features['mask']\n        return tf.reduce_sum(values)\n"
        "    return inner(values[0])\n",
        # the mask is multiplied in without the membership test guarding it
        SAFE_BODY.replace("    if 'mask' in features:\n        values", "    values").replace(
            "    return", "    return"),
    ],
)
def test_any_other_use_of_the_key_keeps_the_advice(tmp_path: Path, body: str) -> None:
    assert "neutral-key" not in kinds(tmp_path, body)


def test_a_complex_mask_keeps_the_advice(tmp_path: Path) -> None:
    # (a+bi)*(1+0i) computes b*0 in a cross term: inf and nan would not come back unchanged.
    assert "neutral-key" not in kinds(tmp_path, SAFE_BODY, dtype="complex64")


def test_a_call_that_passes_its_dict_by_name_keeps_the_advice(tmp_path: Path) -> None:
    text = program(SAFE_BODY).replace("masked_mean({'values': values})", "masked_mean(dict(values=values))")
    (tmp_path / "prog.py").write_text(text)
    assert "neutral-key" not in [s.kind for s in plan_for(report(), SourceReader(tmp_path))]


def test_two_calls_on_one_line_keep_the_advice(tmp_path: Path) -> None:
    # Which of the two a recorded call was cannot be told: both need the key or neither.
    text = program(SAFE_BODY).replace("masked_mean({'values': values})\n",
                                      "masked_mean({'values': values}), masked_mean({'values': values})\n")
    (tmp_path / "prog.py").write_text(text)
    assert "neutral-key" not in [s.kind for s in plan_for(report(), SourceReader(tmp_path))]


def test_a_session_edit_is_refused_where_the_body_does_not_allow_it(tmp_path: Path) -> None:
    # The edit tfretrace makes for the safe body, replayed from a session onto a body that adds the mask.
    (tmp_path / "prog.py").write_text(program(SAFE_BODY))
    (edit,) = plan_for(report(), SourceReader(tmp_path))[0].edits
    (tmp_path / "prog.py").write_text(program(SAFE_BODY.replace("values * features", "values + features")))
    with pytest.raises(AnchorError):
        check_step("neutral-key", anchors_for(report(), SourceReader(tmp_path)), [edit])


def test_the_edit_is_checked_against_the_file_and_foreign_text_is_refused(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(program(SAFE_BODY))
    reader = SourceReader(tmp_path)
    (edit,) = plan_for(report(), reader)[0].edits
    anchors = anchors_for(report(), reader)
    check_step("neutral-key", anchors, [edit])
    hostile = [
        Replacement(edit.span, "{'values': values, \"mask\": __import__('os').system('x')}"),
        Replacement(edit.span, "{'values': values, \"other\": tf.ones_like(values)}"),  # never recorded
        Replacement(edit.span, "{'values': tf.zeros_like(values), \"mask\": tf.ones_like(values)}"),
    ]
    for bad in hostile:
        with pytest.raises(AnchorError):
            check_step("neutral-key", anchors, [bad])
    # The same text on a dict passed to something else is refused too.
    elsewhere = program(SAFE_BODY).replace("masked_mean({'values': values})", "print({'values': values})")
    (tmp_path / "prog.py").write_text(elsewhere)
    with pytest.raises(AnchorError):
        check_step("neutral-key", anchors_for(report(), SourceReader(tmp_path)), [edit])
