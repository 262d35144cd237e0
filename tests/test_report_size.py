"""The default report's size targets (issue 40), measured by bench/report_size.py on stored sessions.

The demo's report at 80 columns: at most 50 lines, 1.5 lines per retrace, 12 lines per function,
the first fix code by line 10, every changed argument and every fix code shown; every example's
report no wider than 80 columns; the examples the issue names at most 5 lines per retrace.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).parent
SESSIONS = HERE / "data" / "report_sessions"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("report_size", HERE.parent / "bench" / "report_size.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["report_size"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def test_the_demo_report_meets_every_target() -> None:
    report, session = BENCH.rendered(SESSIONS / "demo_train.json")
    found = BENCH.measure("demo_train", report, session)
    assert BENCH.misses(found) == []
    # The figures behind it, so a regression names itself.
    assert found.lines <= 50 and found.per_retrace <= 1.5 and found.longest_block <= 12
    assert found.first_code_line is not None and found.first_code_line <= 10
    assert found.retraces == 39  # 36 retraces and 3 XLA recompiles: every one is in a story


def test_no_report_line_is_wider_than_80_columns() -> None:
    widest = {}
    for path in sorted(SESSIONS.glob("*.json")):
        report, session = BENCH.rendered(path)
        widest[path.stem] = BENCH.measure(path.stem, report, session).widest
    assert len(widest) == 16 and {name: w for name, w in widest.items() if w > 80} == {}


@pytest.mark.parametrize("name", ["keras_predict_loop", "new_function_object", "python_value_changed"])
def test_the_examples_the_issue_names_take_at_most_5_lines_per_retrace(name: str) -> None:
    report, session = BENCH.rendered(SESSIONS / f"{name}.json")
    found = BENCH.measure(name, report, session)
    assert found.per_retrace <= 5.0


def test_the_measure_finds_a_missing_argument_and_a_missing_fix_code() -> None:
    report, session = BENCH.rendered(SESSIONS / "demo_train.json")
    cut = "\n".join(line for line in report.split("\n") if "tokens" not in line and "@tf.function" not in line)
    missing = BENCH.measure("demo_train", cut, session).missing
    assert "train_step: argument tokens" in missing and "train_step: fix code" in missing


def test_the_report_part_of_a_run_starts_at_its_summary() -> None:
    stderr = "I0000 port.cc:153] oneDNN custom operations are on.\ntfretrace: 1 function, 2 traces\nx\n"
    assert BENCH.report_part(stderr) == "tfretrace: 1 function, 2 traces\nx"
