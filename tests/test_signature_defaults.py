"""Which trailing parameters an input_signature leaves at their default (fix.core.signature_defaults), recorded calls.

The TensorFlow side (a left-out default is bound as a Literal, 9 -> 3 traces on the Core APIs
MLP) is measured in tests/test_fix_module_signature_real.py.
"""

from __future__ import annotations

import ast

from tfretrace.fix.core.predict import Call
from tfretrace.fix.core.rules import covers
from tfretrace.fix.core.signature_defaults import defaults_left_out
from tfretrace.records.events import BY_TYPE, LITERAL_RULE, PYTHON, TENSOR, Leaf

DEF = ast.parse("def __call__(self, x, scale=1.0, preds=False):\n    return x\n").body[0]
PARAMS = ("x", "scale", "preds")


def _call(index: int, scale: str = "1.0", preds: str = "False", preds_type: str = "bool",
          extra: tuple[tuple[str, str], ...] = ()) -> Call:
    signature = (
        Leaf("x", TENSOR, dtype="float32", shape=(index, 4)),
        Leaf("scale", PYTHON, value=scale, type_name="float", extra=extra),
        Leaf("preds", PYTHON, value=preds, type_name=preds_type, extra=extra),
    )
    return Call(index, 1, (), signature, None, 0.0)


def test_every_trailing_default_left_at_its_value_is_left_out() -> None:
    found = defaults_left_out(DEF, PARAMS, [_call(1), _call(2)])
    assert sorted(found) == ["preds", "scale"]
    # The replay's signature keeps the recorded literal: a later call passing the default binds.
    declared = (Leaf("x", TENSOR, dtype="float32", shape=(None, 4)), found["scale"], found["preds"])
    assert covers(declared, _call(3).signature)
    assert not covers(declared, _call(4, preds="True").signature)


def test_a_value_other_than_the_default_keeps_that_parameter_and_those_before_it() -> None:
    assert sorted(defaults_left_out(DEF, PARAMS, [_call(1), _call(2, preds="True")])) == []
    assert sorted(defaults_left_out(DEF, PARAMS, [_call(1), _call(2, scale="2.0")])) == ["preds"]
    # No default on x: it is never left out, even were it a constant.
    assert "x" not in defaults_left_out(DEF, PARAMS, [_call(1)])


def test_equal_values_follow_the_literal_rule_of_the_tensorflow_that_recorded_them() -> None:
    # TF 2.21: Literal[False] takes 0 (1 == 1.0 == True); from TF 2.23 only a value of the same type.
    assert "preds" in defaults_left_out(DEF, PARAMS, [_call(1, preds="0", preds_type="int")])
    by_type = ((LITERAL_RULE, BY_TYPE),)
    assert "preds" not in defaults_left_out(DEF, PARAMS, [_call(1, preds="0", preds_type="int", extra=by_type)])
    assert "preds" in defaults_left_out(DEF, PARAMS, [_call(1, extra=by_type)])
