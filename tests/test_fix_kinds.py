"""One kind, one module (issue 38 item 6): the catalogue table is the registry's, and each kind's fixture folder
(tests/data/kinds/<kind>/) is planned and edited as it expects, without TensorFlow."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kind_fixtures import FIXTURES, edited, plan_rows, replanned
from tfretrace.fix.kinds import KIND_CHANGES, REGISTRY, catalogue_table

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fix-catalogue.md"
FOLDERS = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
# Kinds with no fixture folder yet: the list only shrinks (a new kind comes with its folder).
WITHOUT_FIXTURE = {
    "neutral-key", "hoist-factory-call", "hoist-object", "hoist-pipeline", "wrap-vectorized-map",
    "saved-signature", "element-spec", "keras-pad-rows", "tensor-argument",
    "drop-remainder", "keras-call",
}


def _tool() -> object:
    spec = importlib.util.spec_from_file_location("fix_catalogue", ROOT / "tools" / "fix_catalogue.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_catalogue_table_is_generated_from_the_registry() -> None:
    text = DOC.read_text(encoding="utf-8")
    tool = _tool()
    assert tool.replaced(text, catalogue_table()) == text  # type: ignore[attr-defined]
    # Every registered kind has its row there, in the registry's order.
    names = [line.split("`")[1] for line in catalogue_table().splitlines()[2:-1]]
    assert names == [kind.name for kind in REGISTRY]


def test_a_kind_row_changed_on_its_record_changes_the_table() -> None:
    from dataclasses import replace

    import tfretrace.fix.kinds as kinds

    first = REGISTRY[0]
    assert first.row is not None
    changed = replace(first, row=replace(first.row, checks="something else"))
    saved = kinds.REGISTRY
    try:
        kinds.REGISTRY = (changed, *saved[1:])
        assert "| something else |" in catalogue_table()
    finally:
        kinds.REGISTRY = saved


def test_every_registered_kind_has_a_fixture_folder_or_is_listed_as_without() -> None:
    names = {kind.name for kind in REGISTRY}
    folders = {p.name for p in FOLDERS}
    assert folders <= names, folders - names
    assert names >= WITHOUT_FIXTURE
    assert folders | WITHOUT_FIXTURE == names
    assert not folders & WITHOUT_FIXTURE


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_kind_fixture_plans_and_edits_as_expected(folder: Path) -> None:
    session = replanned(folder)
    rows = plan_rows(session)
    assert rows == json.loads((folder / "plan.json").read_text(encoding="utf-8"))
    # The fixture exercises its own kind, and the step carries what that kind's record declares.
    steps = [s for f in rows for s in f["steps"] if s["kind"] == folder.name]
    assert steps and all(s["edits"] for s in steps)
    if folder.name in KIND_CHANGES:
        assert {s["changes"] for s in steps} == {KIND_CHANGES[folder.name]}
    after = edited(folder, session)
    assert after != (folder / "program.py").read_text(encoding="utf-8")
    assert after == (folder / "expected.py").read_text(encoding="utf-8")
