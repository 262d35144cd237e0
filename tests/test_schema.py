"""session.schema.json: shipped in the package, valid JSON Schema, and the sessions tfretrace writes follow it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest

import sessions as S
from schema_helpers import schema_errors


def test_the_schema_ships_in_the_package_and_is_valid() -> None:
    import jsonschema

    schema = json.loads((resources.files("tfretrace") / "session.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"] == {"const": 1, "description": schema["properties"]["schema"]["description"]}


@pytest.mark.parametrize("build", [S.empty_session, S.healthy_session, S.storm_session, S.mixed_session])
def test_hand_built_sessions_follow_the_schema(build: Callable[[], Any]) -> None:
    assert schema_errors(build().to_dict()) == []


def _first_event(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["functions"][0]["events"][0]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda d: d.__setitem__("schema", 2), "schema"),
        (lambda d: d.pop("functions"), "<root>"),
        (lambda d: d["functions"][0].__setitem__("calls", -1), "functions/0/calls"),
        (lambda d: d["functions"][0].__setitem__("traces", 1.5), "functions/0/traces"),
        (lambda d: _first_event(d).__setitem__("index", 0), "functions/0/events/0/index"),
        (lambda d: _first_event(d)["signature"][0].__setitem__("shape", ["8"]),
         "functions/0/events/0/signature/0/shape"),
        (lambda d: d["tool"].__setitem__("name", "other"), "tool/name"),
    ],
)
def test_damaged_documents_are_refused_where_they_break(damage: Callable[[dict[str, Any]], Any], where: str) -> None:
    doc = copy.deepcopy(S.mixed_session().to_dict())
    damage(doc)
    errors = schema_errors(doc)
    assert errors and all(e.startswith(f"{where}:") for e in errors), errors


def test_fields_added_later_are_allowed_everywhere() -> None:
    doc = S.mixed_session().to_dict()
    doc["xla_compiles"] = 3
    doc["functions"][0]["xla_compiles"] = 2
    _first_event(doc)["xla"] = {"compiled": True}
    _first_event(doc)["signature"][0]["new_field"] = 1
    assert schema_errors(doc) == []
