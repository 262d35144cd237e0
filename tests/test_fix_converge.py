"""``fix --verify``'s later rounds without TensorFlow (fix.applying.converge): which round stands, and what is written.

The session planned from is a real one (tests/data/kinds/hoist-def, a safe hoist); the runs of the copy
are stand-ins that return a session, so each stop rule is met on purpose.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from kind_fixtures import FIXTURES
from tfretrace.fix.applying.converge import CONVERGED, FAILED, LIMIT, NO_GAIN, OUTPUT, more_rounds
from tfretrace.records.output import OutputDigest
from tfretrace.records.session import Session, load

FIXTURE = FIXTURES / "hoist-def"


def _folders(tmp_path: Path) -> tuple[Path, Path, Session]:
    root, copy = tmp_path / "root", tmp_path / "copy"
    for folder in (root, copy):
        folder.mkdir()
        shutil.copy(FIXTURE / "program.py", folder / "program.py")
    return root, copy, load(FIXTURE / "session.json")


def _rounds(tmp_path: Path, after: Session | None, status: int = 0, limit: int = 2) -> tuple[object, Path, Path]:
    root, copy, first = _folders(tmp_path)
    calls: list[int] = []

    def run(number: int) -> tuple[int, bool, Session | None, Path | None]:
        calls.append(number)
        return status, False, after, None

    done = more_rounds(first, first, (), copy, root, unsafe=False, limit=limit, run=run, log=None)
    assert calls == [2]
    return done, root, copy


def test_a_round_that_removes_traces_stands_and_its_edits_are_returned(tmp_path: Path) -> None:
    first = load(FIXTURE / "session.json")
    done, root, _copy = _rounds(tmp_path, replace(first, functions=()))  # no trace left
    assert done.stopped == LIMIT  # type: ignore[attr-defined]
    assert [(r.number, r.kinds, r.kept) for r in done.rounds] == [(1, ("hoist-def",), True), (2, ("hoist-def",), True)]  # type: ignore[attr-defined]
    (change,) = done.changes  # type: ignore[attr-defined]
    assert change.after == (FIXTURE / "expected.py").read_text()
    assert change.disk == root.resolve() / "program.py"
    # The program's own folder is read, never written: --apply writes the changes afterwards.
    assert (root / "program.py").read_text() == (FIXTURE / "program.py").read_text()


@pytest.mark.parametrize(("after_of", "status", "stopped"), [
    (lambda s: s, 0, NO_GAIN),  # as many traces as before
    (lambda s: replace(s, functions=()), 1, FAILED),
    (lambda s: None, 0, FAILED),  # no session came back
    (lambda s: replace(s, functions=(), stdout=OutputDigest(1, 1, "0" * 64, ())), 0, OUTPUT),
])
def test_a_round_that_does_not_stand_is_taken_back_in_the_copy(tmp_path: Path, after_of: object, status: int,
                                                               stopped: str) -> None:
    first = load(FIXTURE / "session.json")
    assert first.stdout is not None
    done, _root, copy = _rounds(tmp_path, after_of(first), status)  # type: ignore[operator]
    assert done.stopped == stopped  # type: ignore[attr-defined]
    assert [r.kept for r in done.rounds] == [True, False]  # type: ignore[attr-defined]
    assert done.changes == ()  # type: ignore[attr-defined]
    assert (copy / "program.py").read_text() == (FIXTURE / "program.py").read_text()
    assert done.session == first  # type: ignore[attr-defined]


def test_rounds_stop_when_the_last_run_leaves_nothing_to_edit(tmp_path: Path) -> None:
    root, copy, first = _folders(tmp_path)
    nothing = replace(first, functions=())

    def run(number: int) -> tuple[int, bool, Session | None, Path | None]:
        raise AssertionError("no round to run")

    done = more_rounds(first, nothing, (), copy, root, unsafe=False, limit=3, run=run, log=None)
    assert done.stopped == CONVERGED
    assert [r.number for r in done.rounds] == [1]
