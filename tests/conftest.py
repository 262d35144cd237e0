"""Fixtures shared by the in-process command line tests (a stand-in monitor, a small script)."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import sessions as S
from cli_fakes import SCRIPT, FakeMonitor
from schema_helpers import schema_errors


@pytest.fixture
def clean_global_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`run` swaps sys.argv, sys.path[0] and __main__: each test must leave them as it found them."""
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    before = (list(sys.argv), sys.path[0], sys.modules["__main__"])
    yield
    assert (list(sys.argv), sys.path[0], sys.modules["__main__"]) == before


@pytest.fixture
def monitor(monkeypatch: pytest.MonkeyPatch) -> FakeMonitor:
    # The budgets load on first use and import the monitor: load them with the real one before
    # the stand-in takes its place, as `import tfretrace` once did for every test.
    importlib.import_module("tfretrace.budget")
    fake = FakeMonitor(S.mixed_session())
    module = types.ModuleType("tfretrace.runtime.monitor")
    module.install = fake.install  # type: ignore[attr-defined]
    module.stop = fake.stop_process  # type: ignore[attr-defined]
    module.current = fake.current  # type: ignore[attr-defined]
    module.prepare_xla = lambda lower_level=False: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tfretrace.runtime.monitor", module)
    return fake



@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path




@pytest.fixture(autouse=True)
def saved_sessions_follow_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session a test saves (CLI --save, -o x.json, Session.save) is checked against
    session.schema.json, the published contract, before it is written."""
    from tfretrace.records.session import Session

    original = Session.to_json

    def checked(self: Session) -> str:
        errors = schema_errors(self.to_dict())
        assert errors == [], errors[:5]
        return original(self)

    monkeypatch.setattr(Session, "to_json", checked)
