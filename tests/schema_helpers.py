"""Validating session documents against the JSON Schema shipped in the package."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads((resources.files("tfretrace") / "session.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(document: Any) -> list[str]:
    """Every place ``document`` breaks session.schema.json, as ``path: message`` lines."""
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in _validator().iter_errors(document)
    ]
