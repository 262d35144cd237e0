"""In-process tests of the command line: run (with a stand-in monitor), report, explain, lint."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import sys
import tempfile
import textwrap
import types
from pathlib import Path

import pytest

import sessions as S
import tfretrace
from cli_fakes import SCRIPT, FakeMonitor
from tfretrace.cli import app as cli
from tfretrace.cli.invocation import tfretrace_command
from tfretrace.records import catalogue

pytestmark = pytest.mark.usefixtures("clean_global_state")


def _stdout_json(out: str) -> dict[str, object]:
    return json.loads(out.splitlines()[0])  # type: ignore[no-any-return]


# -- run -----------------------------------------------------------------------------------------


def test_run_passes_argv_and_main_and_reports_to_stderr(
    script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "s.json"
    code = cli.main(["run", "--save", str(saved), str(script), "a", "--save", "x", "-m", "y"])
    out, err = capsys.readouterr()
    assert code == 0
    seen = _stdout_json(out)
    # Everything after the script is the script's, even options tfretrace also has.
    assert seen["argv"] == [str(script), "a", "--save", "x", "-m", "y"]
    assert seen["name"] == "__main__"
    assert "tfretrace: 6 functions" in err and "train_step" not in out
    assert f"Re-render: {tfretrace_command()} report {saved} -o report.html" in re.sub(r" \\\n *", " ", err)
    assert monitor.installed == [False] and monitor.stopped == 1
    assert monitor.kept_for_probe  # a run that will be asked keeps nested closures for the probe
    loaded = tfretrace.load(saved)
    assert loaded.argv == (str(script), "a", "--save", "x", "-m", "y")


def test_run_keeps_exit_status(script: Path, monitor: FakeMonitor,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(script), "--exit", "3"]) == 3
    assert not monitor.kept_for_probe  # a plain run keeps nothing alive
    assert cli.main(["run", str(script), "--exit", "0"]) == 0
    assert cli.main(["run", str(script), "--exit-message"]) == 1
    assert "fatal: bad config" in capsys.readouterr().err


def test_run_script_that_raises_still_reports(script: Path, monitor: FakeMonitor,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(script), "--raise"]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom from the script" in err
    assert err.index("Traceback") < err.index("tfretrace: 6 functions")
    assert os.path.join("tfretrace", "cli") not in err.split("tfretrace: 6 functions")[0]  # our frames are hidden
    assert "runpy" not in err
    assert monitor.stopped == 1


def test_a_syntax_error_in_the_script_shows_python_s_lines_not_ours(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\ndef broken(:\n    pass\n", encoding="utf-8")
    assert cli.main(["run", str(bad)]) == 1
    err = capsys.readouterr().err.split("tfretrace: ")[0]
    # What python itself prints for a script that does not compile: the file, line and caret.
    assert f'File "{bad}", line 2' in err and "SyntaxError" in err
    assert "Traceback" not in err and "runpy" not in err and "tfretrace" not in err, err


def test_fix_without_a_session_names_the_missing_last_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fix", "--apply"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and ".tfretrace/last-session.json" in err, err
    assert sorted(tmp_path.iterdir()) == []  # nothing written


def test_run_without_save_keeps_only_the_last_session(script: Path, monitor: FakeMonitor, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    tempfile.tempdir = None  # re-read TMPDIR
    try:
        assert cli.main(["run", str(script)]) == 0
    finally:
        tempfile.tempdir = None
    err = capsys.readouterr().err
    # No temporary file left; the run's session kept in the project's own ignored folder.
    kept = tmp_path / ".tfretrace"
    assert sorted(tmp_path.rglob("*")) == sorted([*before, kept, kept / ".gitignore", kept / "last-session.json"])
    assert "--save" not in err
    # `tfretrace fix` reads the kept session unnamed: the report need not name its path.
    assert "Re-render:" not in err and ".tfretrace/last-session.json" not in err
    assert cli.main(["fix"]) == 0
    assert "Fix plans" in capsys.readouterr().out
    assert monitor.kept_tf_warning is False
    cli.main(["run", "--keep-tf-warning", str(script)])
    assert monitor.kept_tf_warning is True


def test_run_module(tmp_path: Path, monitor: FakeMonitor, monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> None:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tool.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "mypkg", raising=False)
    assert cli.main(["run", "-m", "mypkg.tool", "--exit", "4"]) == 4
    seen = _stdout_json(capsys.readouterr().out)
    assert seen["name"] == "__main__"
    assert seen["argv"] == [str(package / "tool.py"), "--exit", "4"]
    sys.modules.pop("mypkg", None)


def test_run_writes_outputs_instead_of_terminal_report(
    script: Path, monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html, data = tmp_path / "r.html", tmp_path / "r.json"
    assert cli.main(["run", "-o", str(html), "-o", str(data), str(script)]) == 0
    err = capsys.readouterr().err
    # The files hold the report; the terminal keeps only its one-line summary (issue 41 item 7).
    assert f"tfretrace: wrote {html}" in err and "tfretrace: 6 functions" in err
    assert "tfretrace explain" not in err and "calls" not in err
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert tfretrace.load(data).to_dict() == monitor.session.to_dict() | {
        "argv": [str(script)]
    }


def test_fail_on_retrace(script: Path, monitor: FakeMonitor,
                         capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--fail-on-retrace", str(script)]) == cli.EXIT_RETRACED
    assert "(--fail-on-retrace)" in capsys.readouterr().err
    # The program's own failure wins over the retrace verdict.
    assert cli.main(["run", "--fail-on-retrace", str(script), "--exit", "5"]) == 5
    monitor.session = S.healthy_session()
    assert cli.main(["run", "--fail-on-retrace", str(script)]) == 0


def test_min_traces_hides_rows(script: Path, monitor: FakeMonitor,
                               capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["run", "--min-traces", "5", str(script)])
    err = capsys.readouterr().err
    assert "train_step" in err and "eval_step" not in err and "future_fn" not in err
    assert "4 functions with fewer than 5 traces hidden" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.py"], "can't open file 'missing.py'"),
        (["run", "--bogus", "x.py"], "unrecognized arguments: --bogus"),
        (["run"], "run needs a script or -m module"),
        (["run", "-m"], "-m needs a module name"),
        (["run", "-m", "no_such_module_xyz"], "no module named 'no_such_module_xyz'"),
        (["run", "--min-traces", "zero", "x.py"], "expected a whole number"),
        (["run", "-o", "r.pdf", "x.py"], "no report format for 'r.pdf'"),
        (["report", "nope.json"], "nope.json: no such file"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    argv: list[str], message: str, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tfretrace: error: ") and message in err
    assert monitor.installed == []  # nothing ran


def test_missing_tensorflow_is_one_line(script: Path, monkeypatch: pytest.MonkeyPatch,
                                        monitor: FakeMonitor,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monitor.missing = True
    assert cli.main(["run", str(script)]) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "TensorFlow is not installed" in err and out == ""


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert cli.main(["run", "--help"]) == 0
    assert "script.py | -m module" in capsys.readouterr().out


# -- report --------------------------------------------------------------------------------------


def test_report_merges_saved_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    S.worker_session("worker0", 3).save(a)
    S.worker_session("worker1", 5).save(b)
    assert cli.main(["report", str(a), str(b)]) == 0
    out, _ = capsys.readouterr()
    assert "[worker0] train_step" in out and "[worker1] train_step" in out
    assert "traces diverge across workers for train_step (worker0: 3, worker1: 5)" in out
    assert f"Re-render: {tfretrace_command()} report {a} {b} -o report.html" in re.sub(r" \\\n *", " ", out)
    merged = tmp_path / "m.json"
    assert cli.main(["report", str(a), str(b), "-o", str(merged)]) == 0
    data = json.loads(merged.read_text())
    assert data["workers"] == ["worker0", "worker1"]
    assert sorted({f["worker"] for f in data["functions"]}) == ["worker0", "worker1"]


def test_report_renders_each_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "s.json"
    S.mixed_session().save(saved)
    for name in ("r.txt", "r.html", "r.json"):
        assert cli.main(["report", str(saved), "-o", str(tmp_path / name)]) == 0
    assert (tmp_path / "r.txt").read_text().startswith("tfretrace: 6 functions")
    assert "\x1b[" not in (tmp_path / "r.txt").read_text()
    assert tfretrace.load(tmp_path / "r.json").to_dict() == S.mixed_session().to_dict()
    assert cli.main(["report", "--fail-on-retrace", str(saved)]) == cli.EXIT_RETRACED


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not JSON"), ('{"hello": 1}', "not a tfretrace session"),
     ('{"schema": 1, "tool": {"name": "other"}, "functions": []}', "not a tfretrace session"),
     ('{"schema": 9, "tool": {"name": "tfretrace"}, "functions": []}', "schema 9")],
)
def test_report_rejects_foreign_json(content: str, message: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert cli.main(["report", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_terminal_style_follows_environment() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

        def fileno(self) -> int:
            raise OSError

    tty, pipe = Tty(), open(__file__)  # noqa: SIM115
    try:
        assert cli.terminal_style(tty, {}) == (100, True)  # type: ignore[arg-type]
        assert cli.terminal_style(tty, {"NO_COLOR": "1"})[1] is False  # type: ignore[arg-type]
        assert cli.terminal_style(pipe, {}) == (100, False)
        assert cli.terminal_style(pipe, {"FORCE_COLOR": "1", "COLUMNS": "72"}) == (72, True)
    finally:
        pipe.close()


# -- explain and lint ----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", list(catalogue.entries()), ids=lambda e: e.code)
def test_explain_every_catalogue_entry(entry: catalogue.Cause,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for key in (entry.code, entry.slug, entry.code.lower()):
        assert cli.main(["explain", key]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{entry.code} {entry.slug}: {entry.title}")
        assert "Why:" in out and "Fix:" in out
        if entry.bad:
            assert "Bad:" in out and "Good:" in out


def test_explain_unknown_suggests_close_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", "shape-chnged"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean shape-changed" in err
    assert cli.main(["explain", "--list"]) == 0
    assert "TFR001  shape-changed" in capsys.readouterr().out


def test_lint_dispatches_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    module = types.ModuleType("tfretrace.cli.lint_command")
    module.main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tfretrace.cli.lint_command", module)
    assert cli.main(["lint", "--select", "TFR1", "src/"]) == 7
    assert seen == [["--select", "TFR1", "src/"]]


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "tfretrace", "explain", "TFR003"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stdout.startswith("TFR003 python-value-changed")


def test_explanation_text_is_stable_for_the_readme() -> None:
    text = cli.explanation(catalogue.get("TFR002"))
    assert text.splitlines()[0] == "TFR002 dtype-changed: a tensor argument changed dtype"
    assert text.split("Bad:\n")[1].startswith("    step(tf.ones([4]))")


def test_report_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    import subprocess

    path = tmp_path / "big.json"
    # 300 retracing functions, every trace listed (-v): far more than a pipe holds, so the writer meets the closed pipe.
    S.session(*(S.storm(12, name=f"step_{i}") for i in range(300))).save(path)
    result = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shlex.quote(sys.executable)} -m tfretrace report -v {path} | head -n 2"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.stdout.startswith("tfretrace: 300 functions")
    assert result.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" line
    assert result.returncode == cli.EXIT_BROKEN_PIPE


def test_tensorboard_folder_that_is_a_file_is_refused_before_running(
    script: Path, monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "logs"
    taken.write_text("not a folder")
    assert cli.main(["run", "--tensorboard", str(taken), str(script)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err
    assert monitor.installed == []  # the program never ran


def test_piped_report_breaks_long_fix_lines_where_python_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    long_fix = ("losses = [float(train_step(t, y, tf.constant(lr, dtype=tf.float32)))"
                " for t, y in batches(train, y_train)]")
    storm = S.storm(4)
    events = tuple(dataclasses.replace(e, fix=long_fix) if e.index == 2 else e for e in storm.events)
    path = tmp_path / "s.json"
    S.session(dataclasses.replace(storm, events=events)).save(path)
    assert cli.main(["report", "-v", str(path)]) == 0  # captured: not a terminal, so 100 columns, plain
    out = capsys.readouterr().out
    # Piped: 100 columns. The line is broken where Python allows, so it still pastes as the same code.
    assert len(long_fix) > 100 and f"        {long_fix}\n" not in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("losses = ["))
    shown = textwrap.dedent("\n".join(lines[start:start + 2]))
    assert ast.dump(ast.parse(shown)) == ast.dump(ast.parse(long_fix))
    assert max(len(line) for line in lines[start:start + 2]) <= 100
    assert "\x1b" not in out


def _notebook(path: Path, *cells: str) -> Path:
    """A notebook with a markdown cell, then one code cell per text."""
    content = [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]}]
    content += [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                 "source": text.splitlines(keepends=True)} for text in cells]
    path.write_text(json.dumps({"cells": content, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_run_a_notebook_runs_its_code_cells_in_order(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path / "nb.ipynb", "%matplotlib inline\nimport json, sys\nx = 41\n",
                   "x += 1\nprint(json.dumps({'x': x, 'name': __name__, 'argv': sys.argv}))\n")
    assert cli.main(["run", str(nb), "a"]) == 0
    out, err = capsys.readouterr()
    assert _stdout_json(out) == {"x": 42, "name": "__main__", "argv": [str(nb), "a"]}
    assert monitor.stopped == 1 and "tfretrace: 6 functions" in err


def test_run_a_notebook_that_raises_shows_the_cell(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path / "nb.ipynb", "x = 1\n", "y = 2\nraise ValueError('in cell two')\n")
    assert cli.main(["run", str(nb)]) == 1
    err = capsys.readouterr().err
    assert f'File "{nb} (cell 2)", line 2' in err and "raise ValueError('in cell two')" in err
    assert "tfretrace/" not in err.split("tfretrace: 6 functions")[0]


def test_run_a_notebook_with_ipython_syntax_is_refused_in_one_line(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path / "nb.ipynb", "x = 1\n", "!pip install tensorflow\n")
    assert cli.main(["run", str(nb)]) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "cell 2, line 1" in err and "%load_ext tfretrace" in err and "nbconvert --execute" in err
    assert monitor.installed == []  # refused before anything ran


# A Black-style continuation starting with %, a backslash continuation starting with !, and a
# magic-looking line inside a triple-quoted string: all Python, since IPython reads its escapes at
# the start of a logical line only.
CONTINUED = (
    'loss, acc = 0.25, 0.5\n'
    'line = ("loss %.3f acc %.3f"\n'
    '        % (loss, acc))\n'
    'flag = 1 \\\n'
    '    != 2\n'
    'setup = """\n'
    '%matplotlib inline\n'
    '"""\n'
)


def test_run_a_notebook_reads_magics_only_at_logical_line_starts(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path / "nb.ipynb", "import json\n", CONTINUED,
                   "%matplotlib inline\nprint(json.dumps([line, flag, setup]))\n")
    assert cli.main(["run", str(nb)]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out.splitlines()[0]) == ["loss 0.250 acc 0.500", True, "\n%matplotlib inline\n"]
    # A shell escape at the start of a statement, after a multi-line one, is still refused.
    nb = _notebook(tmp_path / "nb.ipynb", CONTINUED + "!ls\n")
    assert cli.main(["run", str(nb)]) == cli.EXIT_USAGE
    assert "cell 1, line 9 is IPython syntax ('!ls')" in capsys.readouterr().err


def test_a_notebook_cell_with_a_line_separator_in_a_string_runs_as_written(tmp_path: Path) -> None:
    import json

    from tfretrace.cli.notebook_run import code_cells

    text = "label = 'a\u2028b\x85c'\nsize = len(label)\n"
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": text}],
                              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    (cell,) = code_cells(nb)
    scope: dict[str, object] = {}
    exec(compile(cell.source, "cell", "exec"), scope)
    assert scope["size"] == 5
