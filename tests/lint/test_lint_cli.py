"""The command line: formats, exit codes, noqa, configuration, excludes and robustness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tfretrace.cli.lint_command import main
from tfretrace.lint import ALL_CODES

BAD = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    print(x)\n    return x\n"
BAD_TWO = BAD + "\n\nfor i in range(3):\n    f(i)\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD_TWO)
    (tmp_path / "pkg" / "clean.py").write_text("x = 1\n")
    return tmp_path


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_exit_codes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pkg/clean.py"]) == 0
    assert main(["pkg"]) == 1
    assert main(["pkg", "--exit-zero"]) == 0
    capsys.readouterr()
    assert main(["missing.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.py" in err
    assert main(["pkg", "--select", "TFR999"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["pkg", "--format", "xml"])
    assert exc.value.code == 2


def test_text_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pkg"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("pkg/bad.py:5:5: TFR108 ")
    assert lines[1].startswith("pkg/bad.py:10:7: TFR106 ")


def test_summary_counts_files_in_the_singular_and_plural(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The summary's noun agrees with its count: "1 file", "2 files".
    main(["pkg/clean.py"])
    assert capsys.readouterr().out.splitlines()[-1].endswith(" in 1 file.")
    main(["pkg"])
    assert " in 2 files." in capsys.readouterr().out


def test_json_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(["pkg"], capsys)
    assert code == 1
    assert [(f["path"], f["line"], f["code"]) for f in doc["findings"]] == [
        ("pkg/bad.py", 5, "TFR108"),
        ("pkg/bad.py", 10, "TFR106"),
    ]
    assert doc["findings"][0]["cause"] == "trace-time-side-effect"
    assert doc["files"] == 2 and doc["skipped"] == []


def test_sarif_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pkg", "--format", "sarif"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == "2.1.0" and "sarif" in doc["$schema"]
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(ALL_CODES)
    assert all(r["shortDescription"]["text"] and r["help"]["text"] for r in rules)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["TFR108", "TFR106"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "pkg/bad.py"
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1


def test_github_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pkg", "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("::warning file=pkg/bad.py,line=5,col=5,title=TFR108 ")


def test_output_file_picks_format_from_suffix(project: Path) -> None:
    assert main(["pkg", "-o", "out.sarif"]) == 1
    assert json.loads((project / "out.sarif").read_text())["version"] == "2.1.0"


def test_select_and_ignore(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert [f["code"] for f in run_json(["pkg", "--select", "TFR108"], capsys)[1]["findings"]] == [
        "TFR108"
    ]
    found = run_json(["pkg", "--ignore", "print-in-tf-function"], capsys)[1]["findings"]
    assert [f["code"] for f in found] == ["TFR106"]
    code, doc = run_json(["pkg", "--ignore", "TFR1"], capsys)
    assert (code, doc["findings"], doc["files"]) == (0, [], 2)


def test_noqa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    lines = BAD_TWO.splitlines()
    lines[4] += "  # noqa: TFR108"
    lines[9] += "  # noqa: E501, TFR101"  # another code: still reported
    Path("a.py").write_text("\n".join(lines) + "\n")
    assert [f["code"] for f in run_json(["a.py"], capsys)[1]["findings"]] == ["TFR106"]
    lines[9] = lines[9].split("#")[0] + "# noqa"
    Path("a.py").write_text("\n".join(lines) + "\n")
    assert run_json(["a.py"], capsys)[0] == 0


def test_pyproject_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.tfretrace]\nignore = ["TFR106"]\nexclude = ["pkg/skipme"]\n'
    )
    (project / "pkg" / "skipme").mkdir()
    (project / "pkg" / "skipme" / "bad.py").write_text(BAD)
    code, doc = run_json(["pkg"], capsys)
    assert code == 1
    assert [(f["path"], f["code"]) for f in doc["findings"]] == [("pkg/bad.py", "TFR108")]
    # Command-line select overrides the file's; --no-config ignores it.
    assert len(run_json(["pkg", "--no-config"], capsys)[1]["findings"]) == 3
    (project / "pyproject.toml").write_text('[tool.tfretrace]\nselect = "TFR999"\n')
    assert main(["pkg"]) == 2
    (project / "pyproject.toml").write_text("[tool.tfretrace\n")
    assert main(["pkg"]) == 2


@pytest.mark.parametrize("table", ["[tool.tfretrace]\nignor = ['TFR106']", "[tool.tfretrace.lint]\nselct = ['ALL']"])
def test_an_unknown_config_key_is_an_error_naming_it(
    project: Path, capsys: pytest.CaptureFixture[str], table: str
) -> None:
    (project / "pyproject.toml").write_text(table + "\n")
    assert main(["pkg"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("'ignor'" in err or "'selct'" in err)


def test_default_excludes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for folder in (".venv", "build", "node_modules", "__pycache__", "site-packages"):
        (project / folder).mkdir()
        (project / folder / "bad.py").write_text(BAD)
    doc = run_json(["."], capsys)[1]
    assert {f["path"] for f in doc["findings"]} == {"pkg/bad.py"}


def test_robustness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("syntax.py").write_text("def f(:\n")
    Path("latin1_cookie.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n" + BAD.encode()
    )
    Path("latin1_plain.py").write_bytes(b"name = '\xe9t\xe9'\n")
    Path("binary.py").write_bytes(b"\x00\x01\x02\xff" * 100)
    Path("huge.py").write_bytes(b"x = 1\n" * (1024 * 1024))  # 6 MiB
    Path("bad_cookie.py").write_bytes(b"# coding: no-such-codec\nx = 1\n")
    code, doc = run_json(["."], capsys)
    assert code == 1
    assert [(f["path"], f["code"]) for f in doc["findings"]] == [("latin1_cookie.py", "TFR108")]
    skipped = {s["path"] for s in doc["skipped"]}
    assert skipped == {"syntax.py", "latin1_plain.py", "binary.py", "huge.py", "bad_cookie.py"}
    assert main(["."]) == 1
    assert "skipped" in capsys.readouterr().out


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--explain", "TFR101"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TFR101 ") and "Bad:" in out and "Good:" in out
    assert main(["--explain", "nope"]) == 2


def test_python_m_and_no_tensorflow_import(project: Path) -> None:
    probe = "import sys, tfretrace.lint, tfretrace.cli.lint_command; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    proc = subprocess.run([sys.executable, "-m", "tfretrace.lint", "pkg"], capture_output=True)
    assert proc.returncode == 1
