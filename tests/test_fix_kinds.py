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
    "saved-signature",
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


def test_the_registry_finds_every_kind_module_and_orders_by_position() -> None:
    import pkgutil

    import tfretrace.fix.kinds as kinds

    declared = [getattr(importlib.import_module(f"tfretrace.fix.kinds.{m.name}"), "KIND", None)
                for m in pkgutil.iter_modules(kinds.__path__)]
    assert sorted(k.name for k in declared if k is not None) == sorted(k.name for k in REGISTRY)
    positions = [kind.position for kind in REGISTRY]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_the_makers_are_the_ones_the_kinds_declare_in_their_order() -> None:
    import tfretrace.fix.kinds as kinds
    from tfretrace.fix.core.kind import PHASE_FINAL, PHASE_STEP

    on_kinds = [m for kind in REGISTRY for m in kind.makers]
    on_modules = [m for name in ("objects", "keras_pad", "nested_number")
                  for m in importlib.import_module(f"tfretrace.fix.kinds.{name}").MAKERS]
    for phase, table in ((PHASE_STEP, kinds.MAKERS), (PHASE_FINAL, kinds.FINAL_MAKERS)):
        found = sorted((m for m in on_kinds + on_modules if m.phase == phase), key=lambda m: m.order)
        assert [m.make for m in found] == list(table)
    assert {m.make for m in on_kinds if m.call_sites} == kinds.CALL_SITE_MAKERS
    # The planner's order, as it was listed by hand before the kinds declared it: the first maker
    # turns Python numbers into tensors, the last step tries the dataset's element_spec first.
    assert kinds.MAKERS[0].__name__ == "python_numbers" and kinds.FINAL_MAKERS[0].__name__ == "element_spec"
    # None listed twice. None lost: each kind's fixture folder (below) fails where no maker makes its step
    # any more; a new kind's makers come with its module alone, so no count is fixed here.
    assert len(set(kinds.MAKERS)) == len(kinds.MAKERS) and len(kinds.FINAL_MAKERS) == 3


def test_two_makers_of_one_phase_with_the_same_order_are_refused() -> None:
    from dataclasses import replace

    import tfretrace.fix.kinds as kinds

    first = next(kind for kind in REGISTRY if kind.makers)
    clash = replace(first.makers[0], make=lambda ctx, state: None)
    twin = replace(first, name="twin", position=first.position + 1, makers=(clash,))
    with pytest.raises(ValueError, match="same order"):
        kinds._makers([], (*REGISTRY, twin), first.makers[0].phase)
    with pytest.raises(ValueError, match="same order"):
        kinds._registry([type("M", (), {"KIND": k})() for k in (first, replace(first, name="other"))])


def test_the_declaring_kinds_are_flagged_on_their_records() -> None:
    # fix.planning.restored reads which steps write a signature (and so a saved model's) from the registry.
    assert {kind.name for kind in REGISTRY if kind.declares_signature} == {"input-signature", "element-spec"}
