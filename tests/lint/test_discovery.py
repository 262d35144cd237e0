"""Which files a run reads, and notebooks: .gitignore, hidden folders, cells, magics, -j and the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tfretrace.lint.runner as runner
from tfretrace.cli.lint_command import main

BAD = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    print(x)\n    return x\n"


def notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
             **({"outputs": [], "execution_count": None} if kind == "code" else {})}
            for kind, text in cells
        ],
    })


NB = notebook(
    ("markdown", "# Training\n"),
    ("code", "import tensorflow as tf\n%matplotlib inline\n!pip install foo\n"),
    ("code", "%%time\nthis is not python\n"),
    ("code", "for epoch in range(3):\n    @tf.function\n    def step(x):\n        return x\n    files = !ls\n"),
    ("code", "tf?\n"),
)


def linted(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main([*argv, "--no-config", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_notebook_cells_map_back_and_magics_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("nb.ipynb").write_text(NB)
    code, doc = linted(["nb.ipynb"], capsys)
    assert code == 1 and doc["skipped"] == []
    assert [(f["cell"], f["line"], f["column"], f["code"]) for f in doc["findings"]] == [(3, 2, 6, "TFR101")]
    assert main(["nb.ipynb", "--no-config"]) == 1
    assert capsys.readouterr().out.startswith("nb.ipynb:cell 3:2:6: TFR101 ")
    # Folders include notebooks.
    Path("sub").mkdir()
    Path("sub/again.ipynb").write_text(NB)
    _, doc = linted(["."], capsys)
    assert sorted({f["path"] for f in doc["findings"]}) == ["nb.ipynb", "sub/again.ipynb"]


def test_a_broken_notebook_is_an_error_with_its_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.ipynb").write_text(notebook(("code", "x = 1\n"), ("code", "def f(:\n")))
    Path("notjson.ipynb").write_text("{not json")
    code, doc = linted(["bad.ipynb", "notjson.ipynb"], capsys)
    assert code == 1
    reasons = {s["path"]: s["reason"] for s in doc["skipped"] if s["error"]}
    assert reasons["bad.ipynb"].startswith("syntax error at cell 2, line 1")
    assert reasons["notjson.ipynb"].startswith("not a notebook")


def test_gitignore_hidden_folders_and_no_gitignore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("private.py\n")
    Path(".gitignore").write_text("generated/\n*_pb2.py\n")
    for name in ("ok.py", "generated/out.py", "api_pb2.py", "private.py", ".hidden/x.py", "deep/.secret.py",
                 "deep/keep.py", "deep/local.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BAD)
    Path("deep/.gitignore").write_text("local.py\n")
    _, doc = linted(["."], capsys)
    assert sorted({f["path"] for f in doc["findings"]}) == ["deep/keep.py", "ok.py"]
    _, doc = linted([".", "--no-gitignore"], capsys)
    assert sorted({f["path"] for f in doc["findings"]}) == [
        "api_pb2.py", "deep/keep.py", "deep/local.py", "generated/out.py", "ok.py", "private.py",
    ]
    # A file named explicitly is linted even if git ignores it (pre-commit passes files).
    _, doc = linted(["generated/out.py"], capsys)
    assert [f["path"] for f in doc["findings"]] == ["generated/out.py"]


def test_parallel_and_cached_runs_give_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for i in range(40):
        Path(f"m{i:02d}.py").write_text(BAD + f"\nfor step in range(3):\n    f(step + {i})\n")
    Path("nb.ipynb").write_text(NB)
    _, serial = linted([".", "-j", "1", "--no-cache"], capsys)
    _, parallel = linted([".", "-j", "2", "--no-cache"], capsys)
    assert parallel == serial and len(serial["findings"]) == 81

    calls: list[str] = []
    real = runner.lint_content

    def counted(data: bytes, shown: str, codes: list[str]) -> runner.FileResult:
        calls.append(shown)
        return real(data, shown, codes)

    monkeypatch.setattr(runner, "lint_content", counted)
    _, cold = linted([".", "-j", "1"], capsys)
    assert len(calls) == 41 and cold == serial
    calls.clear()
    _, warm = linted([".", "-j", "1"], capsys)
    assert calls == [] and warm == serial  # every file from the cache
    Path("m00.py").write_text("x = 1\n")
    _, changed = linted([".", "-j", "1", "--select", "TFR108"], capsys)
    # A new selection is a new cache key for every file; an edited file is linted again anyway.
    assert len(calls) == 41 and len(changed["findings"]) == 39
    assert (tmp_path / ".tfretrace_cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_linting_one_file_keeps_the_cache_of_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # pre-commit passes only the staged files: the other files' entries must survive that run.
    monkeypatch.chdir(tmp_path)
    for i in range(5):
        Path(f"m{i}.py").write_text(BAD + f"\nx = {i}\n")
    calls: list[str] = []
    real = runner.lint_content

    def counted(data: bytes, shown: str, codes: list[str]) -> runner.FileResult:
        calls.append(shown)
        return real(data, shown, codes)

    monkeypatch.setattr(runner, "lint_content", counted)
    linted([".", "-j", "1"], capsys)
    assert len(calls) == 5
    Path("m0.py").write_text(BAD + "\nx = 'edited'\n")
    calls.clear()
    linted(["m0.py", "-j", "1"], capsys)
    assert calls == ["m0.py"]
    calls.clear()
    _, doc = linted([".", "-j", "1"], capsys)
    assert calls == [] and len(doc["findings"]) == 5  # the four untouched files and the edit: hits


def test_the_cache_drops_its_least_recently_used_entries_beyond_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "MAX_CACHE_ENTRIES", 3)
    for i in range(3):
        Path(f"m{i}.py").write_text(f"x = {i}\n")
        linted([f"m{i}.py", "-j", "1"], capsys)
    Path("m3.py").write_text("x = 3\n")
    linted(["m3.py", "-j", "1"], capsys)
    (index,) = (tmp_path / ".tfretrace_cache").glob("lint-*.json")
    kept = json.loads(index.read_text())
    assert len(kept) == 3  # m0's entry, the oldest, went; m3's is last
    calls: list[str] = []
    real = runner.lint_content
    monkeypatch.setattr(
        runner, "lint_content", lambda d, s, c: calls.append(s) or real(d, s, c)  # type: ignore[func-returns-value]
    )
    linted([".", "-j", "1"], capsys)
    assert calls == ["m0.py"]


@pytest.mark.parametrize("odd", ["\u2028", "\f", "\x85"], ids=["line-separator", "form-feed", "next-line"])
def test_a_cell_with_a_line_separator_in_a_string_is_python(
    odd: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python ends a line only at \r\n, \r or \n: these characters inside a string literal are text.
    monkeypatch.chdir(tmp_path)
    cell = f"import tensorflow as tf\nlabel = 'a{odd}b'\n@tf.function\ndef f(x):\n    print(x)\n    return x\n"
    Path("nb.ipynb").write_text(notebook(("code", cell)), encoding="utf-8")
    code, doc = linted(["nb.ipynb"], capsys)
    assert code == 1 and doc["skipped"] == []
    assert [(f["cell"], f["line"], f["code"]) for f in doc["findings"]] == [(1, 5, "TFR108")]


# Python lines that look like IPython at the start of a physical line: a Black-style continuation
# starting with %, a backslash continuation starting with !, a magic inside a triple-quoted string.
CONTINUED = (
    'line = ("loss %.3f acc %.3f"\n'
    '        % (loss, acc))\n'
    'flag = 1 \\\n'
    '    != 2\n'
    'setup = """\n'
    '%matplotlib inline\n'
    '"""\n'
    '!ls\n'
)


def test_notebook_magics_are_read_at_logical_line_starts_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfretrace.lint.notebook import read_notebook

    monkeypatch.chdir(tmp_path)
    data = notebook(("code", "%matplotlib inline\n" + CONTINUED + BAD), ("code", "%%time\nnot python\n"))
    source = read_notebook(data)
    lines = source.text.splitlines()
    # The string keeps its line; the magics at statement starts (line 1, !ls on line 9) read as pass.
    assert lines[:9] == ["pass", *CONTINUED.splitlines()[:7], "pass"]
    Path("nb.ipynb").write_text(data)
    code, doc = linted(["nb.ipynb"], capsys)
    assert code == 1 and doc["skipped"] == []
    assert [(f["cell"], f["line"], f["code"]) for f in doc["findings"]] == [(1, 14, "TFR108")]
