"""Hostile input to the linter: special files, odd names, odd line ends, wide characters, config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfretrace.cli.lint_command import main

PRINT_IN_FN = "@tf.function\ndef f(x):\n    print(x)\n"
HEAD = "import tensorflow as tf\n"


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main([*argv, "--no-config", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_special_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    # In a subprocess with a timeout: before the fix the FIFO blocked the linter forever.
    (tmp_path / "ok.py").write_text(HEAD + PRINT_IN_FN)
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    result = subprocess.run(
        [sys.executable, "-m", "tfretrace", "lint", "--no-config", "--format", "json", ".", "/dev/null"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )
    doc = json.loads(result.stdout)
    assert [f["path"] for f in doc["findings"]] == ["ok.py"]
    skipped = {s["path"]: (s["reason"], s["error"]) for s in doc["skipped"]}
    assert skipped == {p: ("not a regular file", False) for p in ("pipe.py", "zero.py", "/dev/null")}
    assert result.returncode == 1 and result.stderr == ""


def test_undecodable_file_name_is_escaped_in_every_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"caf\xe9.py")
    Path(name).write_text(HEAD + PRINT_IN_FN)
    assert main(["--no-config", "."]) == 1
    out = capsys.readouterr().out
    assert out.startswith("caf\\xe9.py:4:5: TFR108 ")
    out.encode("utf-8")  # printable on any UTF-8 terminal
    _, doc = _json(["."], capsys)
    assert doc["findings"][0]["path"] == "caf\\xe9.py"
    assert main(["--no-config", "--format", "sarif", "."]) == 1
    sarif = json.loads(capsys.readouterr().out)
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "caf%E9.py"


def test_a_failed_output_write_never_truncates_the_earlier_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.py").write_text(HEAD + PRINT_IN_FN)
    report = tmp_path / "report.txt"
    report.write_text("earlier")
    import tfretrace.lint.formats as formats

    def broken(*_: object) -> str:
        return "half \udc80"  # cannot be encoded: the write fails midway

    monkeypatch.setitem(formats.FORMATS, "text", broken)
    with pytest.raises(UnicodeEncodeError):
        main(["--no-config", "--no-cache", ".", "-o", str(report)])
    assert report.read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "report.txt"]


@pytest.mark.parametrize(
    "between",
    ["\f", "\u2028", "\x0b", "\x1c", "\x85"],
    ids=["form-feed", "line-separator", "vertical-tab", "file-separator", "next-line"],
)
def test_noqa_lines_are_numbered_as_python_numbers_them(
    between: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The odd character sits in a comment before the findings: str.splitlines() would count
    # an extra line there, so the noqa would land on the wrong line.
    source = (HEAD + f"# a{between}b\n" + "@tf.function\ndef f(x):\n    print(x)  # noqa: TFR108\n"
              + "@tf.function\ndef g(x):\n    print(x)\n")
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8", newline="")
    _, doc = _json([str(path)], capsys)
    assert [(f["line"], f["code"]) for f in doc["findings"]] == [(8, "TFR108")]


def test_columns_count_characters_not_utf8_bytes(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wide.py"
    path.write_text(HEAD + '@tf.function\ndef f(x):\n    s = "ééé"; print(x)\n', encoding="utf-8")
    _, doc = _json([str(path)], capsys)
    assert [(f["line"], f["column"]) for f in doc["findings"]] == [(4, 16)]
    assert main(["--no-config", str(path)]) == 1
    assert f"{path.as_posix()}:4:16: TFR108" in capsys.readouterr().out
    assert main(["--no-config", "--format", "sarif", str(path)]) == 1
    region = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]["locations"][0]
    assert region["physicalLocation"]["region"]["startColumn"] == 16


def test_sarif_uri_is_percent_encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "my project"
    folder.mkdir()
    (folder / "a#b%20c.py").write_text(HEAD + PRINT_IN_FN)
    assert main(["--no-config", "--format", "sarif", "my project"]) == 1
    doc = json.loads(capsys.readouterr().out)
    found = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert found["uri"] == "my%20project/a%23b%2520c.py"
    from tfretrace.lint.formats import uri

    assert uri("ü/x?.py") == "%C3%BC/x%3F.py"


@pytest.mark.parametrize("select", ["[]", '[""]', '["TFR108", " "]'])
def test_empty_select_in_config_is_an_error(
    select: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("pyproject.toml").write_text(f"[tool.tfretrace]\nselect = {select}\n")
    Path("a.py").write_text(HEAD + PRINT_IN_FN)
    assert main(["a.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tfretrace lint: error:")


def test_empty_select_option_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["--no-config", "--select", "", str(tmp_path / "a.py")]) == 2
    assert capsys.readouterr().err.startswith("tfretrace lint: error: --select")


def test_syntax_error_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "fine.py").write_text("x = 1\n")
    code, doc = _json([str(tmp_path)], capsys)
    assert code == 1 and doc["findings"] == []
    assert [(Path(s["path"]).name, s["error"]) for s in doc["skipped"]] == [("broken.py", True)]
    assert main(["--no-config", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "broken.py: error: syntax error at line 1" in out and "1 file with errors" in out
    assert main(["--no-config", "--format", "github", str(tmp_path)]) == 1
    assert capsys.readouterr().out.startswith("::error file=")
    assert main(["--no-config", "--exit-zero", str(tmp_path)]) == 0


def test_terminal_escapes_in_names_and_paths_are_shown_not_obeyed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("evil\x1b]0;pwned\x07.py").write_text(HEAD + PRINT_IN_FN)
    for fmt in ("text", "github"):
        assert main(["--no-config", "--format", fmt, "."]) == 1
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "evil\\x1b]0;pwned\\x07.py" in out


@pytest.mark.parametrize("output", ["a.py", "other.py"])
def test_output_never_overwrites_source(output: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.py").write_text(HEAD + PRINT_IN_FN)
    Path("other.py").write_text("x = 1\n")
    assert main(["--no-config", "a.py", "-o", output]) == 2
    assert "overwrite" in capsys.readouterr().err
    assert Path("a.py").read_text() == HEAD + PRINT_IN_FN and Path("other.py").read_text() == "x = 1\n"


def test_noqa_inside_a_string_is_no_comment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # tfretrace's own catalogue holds such a string: `make lint-self` must not flag it (TFR100),
    # and it must not suppress the line's finding either.
    source = (HEAD + 'EXAMPLE = "print(x)  # noqa: print-in-tf-fucntion"\n'
              + '@tf.function\ndef f(x):\n    print(x, "# noqa")\n')
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    _, doc = _json([str(path)], capsys)
    assert [(f["line"], f["code"]) for f in doc["findings"]] == [(5, "TFR108")]
