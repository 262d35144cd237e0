"""Moves out of a loop made only where every pass computes the same: factories, two moves to one place, wraps."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from sessions import event, tensor
from tfretrace.cli import main
from tfretrace.fix.core.source import SourceReader
from tfretrace.fix.kinds.hoist_factory_call import factory_edits
from tfretrace.fix.planning.plan import PlanStep, plan_for
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session

FACTORY = (
    "import tensorflow as tf\n"
    "\n"
    "\n"
    "def make_f(k):\n"
    "    @tf.function\n"
    "    def f(x):\n"  # 6
    "        return x * k\n"
    "\n"
    "    return f\n"
    "\n"
    "\n"
)
LOOP = (
    "for i in range(3):\n"  # 12
    "    fn = make_f(2.0)\n"
    "    print(float(fn(tf.constant(1.0))))\n"  # 14
)


def derived(tmp_path: Path, text: str, site: int = 14) -> object:
    (tmp_path / "prog.py").write_text(text)
    reader = SourceReader(tmp_path)
    return factory_edits(reader, reader.function_at("prog.py:6", "f"), f"prog.py:{site}")


def test_a_factory_of_constants_is_called_once_before_its_loop(tmp_path: Path) -> None:
    found = derived(tmp_path, FACTORY + LOOP)
    assert found is not None
    name, (removal, insertion) = found  # type: ignore[misc]
    assert (name, removal.span.line, insertion.span.line, insertion.text) == ("fn", 13, 12, "fn = make_f(2.0)\n")


@pytest.mark.parametrize(
    ("text", "site"),
    [
        # the def reads a module variable that a function changes between passes
        (FACTORY.replace("x * k", "x * k * G") + "G = 1.0\n\n\ndef bump():\n    global G\n    G += 1.0\n\n\n"
         + LOOP.replace("    print", "    bump()\n    print"), 19 + 6),
        # a module variable rebound by the loop itself
        (FACTORY.replace("x * k", "x * k * H") + "H = 0.0\n" + LOOP.replace("    fn =", "    H = float(i)\n    fn ="),
         16),
        # the bound name is read on a pass before the factory call (the first pass saw the old one)
        (FACTORY + "fn = make_f(1.0)\n" + LOOP.replace(
            "    fn = make_f(2.0)\n    print(float(fn(tf.constant(1.0))))\n",
            "    print(float(fn(tf.constant(1.0))))\n    fn = make_f(2.0)\n"), 14),
        # the factory's name is rebound at module level (a wrapper with a side effect)
        (FACTORY + "make_f = print and make_f\n" + LOOP, 15),
        # the loop's own variable is the factory's name
        (FACTORY + LOOP.replace("for i in range(3):", "for make_f in (make_f, make_f):"), 14),
        # a list passed to the factory: a helper may change it between passes
        (FACTORY + "ks = [2.0]\n" + LOOP.replace("make_f(2.0)", "make_f(ks)"), 15),
        # the name is read after the loop: a loop that never runs would now leave it bound
        (FACTORY + LOOP + "if fn:\n    pass\n", 14),
    ],
    ids=["global-changed-by-a-call", "global-rebound-in-loop", "read-before", "factory-rebound", "loop-target",
         "list-argument", "read-after-loop"],
)
def test_a_factory_call_is_left_in_its_loop_where_a_pass_could_differ(tmp_path: Path, text: str, site: int) -> None:
    assert derived(tmp_path, text, site) is None


def _session(tmp_path: Path, text: str, functions: tuple[FunctionReport, ...]) -> Path:
    (tmp_path / "prog.py").write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Session(functions=functions, wall_seconds=1.0, root=str(tmp_path), sources=(("prog.py", digest),)).save(
        tmp_path / "run.json"
    )


def test_two_factories_moved_before_one_loop_are_both_written_there(tmp_path: Path) -> None:
    text = (FACTORY + FACTORY.split("\n\n\n", 1)[1].replace("make_f", "make_g").replace("def f", "def g")
            .replace("return f", "return g").replace("x * k", "x + k")
            + "for i in range(3):\n    f = make_f(2.0)\n    g = make_g(3.0)\n    print(float(f(1.0)), float(g(1.0)))\n")
    (tmp_path / "prog.py").write_text(text)
    reader = SourceReader(tmp_path)
    lines = text.splitlines()
    site = lines.index("    print(float(f(1.0)), float(g(1.0)))") + 1
    reports = []
    for name, line in (("f", 6), ("g", lines.index("    def g(x):") + 1)):
        found = factory_edits(reader, reader.function_at(f"prog.py:{line}", name), f"prog.py:{site}")
        assert found is not None, name
        step = PlanStep("new-function-object", "hoist-factory-call", "once", None, found[1], 3, 1, 0.01, safety="safe")
        events = tuple(
            replace(event(i + 1, "first-trace" if i == 0 else "new-function-object", time=i, calls_total=i + 1,
                          object_index=i + 1), call_site=f"prog.py:{site}")
            for i in range(3)
        )
        reports.append(FunctionReport(name=f"make_{name}.<locals>.{name}", location=f"prog.py:{line}", calls=3,
                                      traces=3, trace_seconds=0.03, objects=3, events=events, plan=(step.to_dict(),)))
    saved = _session(tmp_path, text, tuple(reports))
    assert main(["fix", str(saved), "--apply", "--root", str(tmp_path)]) == 0
    edited = (tmp_path / "prog.py").read_text()
    head, loop = edited.split("for i in range(3):\n")
    assert head.endswith("f = make_f(2.0)\ng = make_g(3.0)\n\n\n")
    assert "make_" not in loop


WRAP = (
    "import tensorflow as tf\n"
    "\n"
    "\n"
    "def total(x):\n"  # 4
    "    return tf.reduce_sum(x)\n"
    "\n"
    "\n"
    "for n in (2, 3, 4, 5):\n"  # 8
    "    total_fn = tf.function(total)\n"
    "    print(float(total_fn(tf.ones([n]))))\n"  # 10
)


def wrap_report() -> FunctionReport:
    events = tuple(
        replace(event(i + 1, "first-trace" if i == 0 else "new-function-object", time=i, calls_total=i + 1,
                      signature=(tensor("x", n),), object_index=i + 1), call_site="prog.py:10")
        for i, n in enumerate((2, 3, 4, 5))
    )
    return FunctionReport(name="total", location="prog.py:4", calls=4, traces=4, trace_seconds=0.04, objects=4,
                          events=events)


def test_the_signature_after_a_moved_wrap_is_written_into_the_moved_line(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(WRAP)
    steps = plan_for(wrap_report(), SourceReader(tmp_path))
    assert [(s.kind, s.by, s.traces_after) for s in steps] == [("hoist-wrap", "tfretrace", 4),
                                                               ("input-signature", "tfretrace", 1)]
    removal, insertion = steps[1].edits
    assert removal == steps[0].edits[0] and insertion.span == steps[0].edits[1].span
    assert "input_signature" in insertion.text


def test_where_the_moved_line_cannot_take_the_signature_it_is_left_by_hand(tmp_path: Path) -> None:
    # The wrapped call's text twice on the line (a comment): the moved line cannot be rewritten
    # exactly, and editing the line the move removes would undo the move.
    text = WRAP.replace("total_fn = tf.function(total)\n", "total_fn = tf.function(total)  # tf.function(total)\n")
    (tmp_path / "prog.py").write_text(text)
    steps = plan_for(wrap_report(), SourceReader(tmp_path))
    # The move removes nothing alone (a new length every pass): with the declaration by hand, both are.
    assert [(s.kind, s.by, s.edits) for s in steps] == [("hoist-wrap", "hand", ()), ("input-signature", "hand", ())]
