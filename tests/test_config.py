"""Project settings in pyproject.toml for run, fix and the pytest plugin (the linter has its own tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_fakes import FakeMonitor
from tfretrace._util.config import ProjectConfigError, find, load
from tfretrace.cli import app as cli
from tfretrace.lint import config as lint_config

pytest_plugins = ["pytester"]

PYPROJECT = """
[tool.tfretrace]
ignore = ["TFR108"]

[tool.tfretrace.run]
output-dir = "tfretrace-out"
keep-tf-warning = true
max-traces = 3
prevent = "profile.json"
baseline = "traces-baseline.json"

[tool.tfretrace.fix]
root = "src"

[tool.tfretrace.pytest]
summary = true
"""


def test_every_commands_table_is_read_and_paths_start_at_the_pyproject(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    assert find(tmp_path / "sub") == path
    settings = load(path)
    assert settings.run.output_dir == tmp_path / "tfretrace-out" and settings.run.keep_tf_warning
    assert (settings.run.max_traces, settings.run.prevent) == (3, tmp_path / "profile.json")
    assert settings.run.baseline == tmp_path / "traces-baseline.json"
    assert settings.fix.root == tmp_path / "src"
    assert settings.pytest.summary and settings.pytest.max_traces is None
    # The linter reads the same file and its own keys only.
    assert lint_config.load(path).ignore == ("TFR108",)


@pytest.mark.parametrize(
    ("table", "message"),
    [("[tool.tfretrace.run]\nkeep-tf-warnings = true\n", "unknown key 'keep-tf-warnings'"),
     ("[tool.tfretrace.run]\nmax-traces = -1\n", "max-traces must be a whole number"),
     ("[tool.tfretrace.pytest]\nsummary = 'yes'\n", "summary must be true or false"),
     ("[tool.tfretrace]\nrun = 1\n", "run must be a table")],
)
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(table, encoding="utf-8")
    with pytest.raises(ProjectConfigError, match=message) as info:
        load(path)
    assert "\n" not in str(info.value)


@pytest.mark.usefixtures("clean_global_state")
def test_run_takes_its_defaults_from_the_project(
    script: Path, monitor: FakeMonitor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # max-traces needs the real monitor: tests/test_cli_run.py
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.replace("max-traces = 3\n", ""), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--save", "s.json", "-o", "r.html", str(script)]) == 0
    assert (tmp_path / "tfretrace-out" / "s.json").is_file() and (tmp_path / "tfretrace-out" / "r.html").is_file()
    assert monitor.kept_tf_warning is True
    (tmp_path / "pyproject.toml").write_text("[tool.tfretrace.run]\nfix_plan = true\n", encoding="utf-8")
    assert cli.main(["run", str(script)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("tfretrace: error:") and "'fix_plan'" in err


def test_the_pytest_plugin_takes_its_options_from_the_project(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject="[tool.tfretrace.pytest]\nsummary = true\n")
    pytester.makepyfile(test_plain="def test_arithmetic():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*tfretrace: tf.function traces per test*", "no test traced a tf.function"])
    pytester.makefile(".toml", pyproject="[tool.tfretrace.pytest]\nsumary = true\n")
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown key 'sumary'" in bad.stderr.str()


def test_fix_takes_its_root_from_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from test_fix_command import SIGNATURE, TRAIN, recorded, step
    from tfretrace.records.session import load as load_session

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    saved = recorded(checkout, [step((SIGNATURE,))], {"train.py": TRAIN})
    # The run was recorded on another machine: its root does not exist here, and is never used.
    replace(load_session(saved), root=str(tmp_path / "ci" / "build")).save(saved)
    # Called from a subfolder, fix looks for train.py there: it is not.
    (checkout / "scripts").mkdir()
    monkeypatch.chdir(checkout / "scripts")
    assert cli.main(["fix", "../run.json", "--apply", "--unsafe-fixes"]) == cli.EXIT_USAGE
    assert "reduce_retracing=True" not in (checkout / "train.py").read_text()
    # The project's setting, relative to its pyproject.toml, names the folder the program is in.
    (checkout / "pyproject.toml").write_text('[tool.tfretrace.fix]\nroot = "."\n', encoding="utf-8")
    assert cli.main(["fix", "../run.json", "--apply", "--unsafe-fixes"]) == 0
    assert "reduce_retracing=True" in (checkout / "train.py").read_text()


@pytest.mark.usefixtures("clean_global_state")
def test_run_compares_with_the_projects_baseline_once_it_exists(
    script: Path, monitor: FakeMonitor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from tfretrace.compare.baseline import Baseline

    (tmp_path / "pyproject.toml").write_text('[tool.tfretrace.run]\nbaseline = "b.json"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # Not recorded yet: the run goes on without a comparison.
    assert cli.main(["run", str(script)]) == 0
    assert "b.json" in capsys.readouterr().err
    # An empty baseline: every retracing function of the run is new and worse.
    (tmp_path / "b.json").write_text(json.dumps(Baseline().to_dict()), encoding="utf-8")
    assert cli.main(["run", str(script)]) == 1
    # The command line's baseline wins over the project's.
    assert cli.main(["run", "--baseline", str(tmp_path / "missing.json"), str(script)]) == cli.EXIT_USAGE
