"""Hostile use of the command line: bad paths, hostile sessions, escapes, chdir, odd programs."""

from __future__ import annotations

import ast
import importlib
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

import sessions as S
from cli_fakes import FakeMonitor
from tfretrace._util import io as _io
from tfretrace.cli import app as cli
from tfretrace.cli import output as _cli_output
from tfretrace.cli import program as _program
from tfretrace.explain.messages import format_event
from tfretrace.records.events import Change
from tfretrace.records.session import Session, SessionFormatError, load
from tfretrace.render import TextRenderer

pytestmark = pytest.mark.usefixtures("clean_global_state")
SRC = Path(__file__).resolve().parents[1] / "src" / "tfretrace"
# Window title, OSC 52 clipboard write, screen clear, a raw CSI byte and a bidi override.
ESCAPES = "\x1b]0;pwned\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b[H \x9b31m \u202e"


def _one_error_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("tfretrace: error: "), err


# -- output paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["missing_dir/report.html", "folder.html"])
def test_run_checks_outputs_before_running_the_program(
    output: str, script: Path, monitor: FakeMonitor, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "folder.html").mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "-o", output, str(script)]) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    _one_error_line(err)
    assert out == "" and monitor.installed == []  # the program never ran


def test_run_checks_save_path_before_running(
    script: Path, monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--save", str(tmp_path / "nope" / "s.json"), str(script)]) == 2
    out, err = capsys.readouterr()
    _one_error_line(err)
    assert out == "" and monitor.installed == []


def test_report_into_a_missing_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = S.mixed_session().save(tmp_path / "s.json")
    assert cli.main(["report", str(saved), "-o", str(tmp_path / "no" / "r.html")]) == 2
    _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(("exit_code", "expected"), [("3", 3), ("0", cli.EXIT_USAGE)])
def test_a_failed_write_keeps_the_program_status_and_the_old_file(
    exit_code: str, expected: int, script: Path, monitor: FakeMonitor, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = tmp_path / "r.txt"
    report.write_text("the earlier report")

    def full_disk(path: object, text: str, **_: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_cli_output, "atomic_write_text", full_disk)
    assert cli.main(["run", "-o", str(report), str(script), "--exit", exit_code]) == expected
    err = capsys.readouterr().err
    assert "could not write" in err and "No space left" in err and "Traceback" not in err
    assert report.read_text() == "the earlier report"


def test_relative_outputs_survive_a_chdir_in_the_program(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "prog.py").write_text("import os\nos.chdir('elsewhere')\n")
    monkeypatch.chdir(tmp_path)
    try:
        assert cli.main(["run", "--save", "s.json", "-o", "r.txt", "prog.py"]) == 0
    finally:
        os.chdir(tmp_path)
    assert (tmp_path / "s.json").is_file() and (tmp_path / "r.txt").is_file()
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert "tfretrace: wrote r.txt" in capsys.readouterr().err


def test_program_that_stops_the_monitor_itself_still_reports(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "prog.py"
    program.write_text("import sys\nsys.modules['tfretrace.runtime.monitor'].stop()\nsys.exit(4)\n")
    assert cli.main(["run", "--save", str(tmp_path / "s.json"), str(program)]) == 4
    err = capsys.readouterr().err
    assert "tfretrace: 6 functions" in err and "Traceback" not in err
    expected = [(f.name, f.traces) for f in S.mixed_session().functions]
    assert [(f.name, f.traces) for f in load(tmp_path / "s.json").functions] == expected


# -- hostile sessions ------------------------------------------------------------------------


def _session_json(top: dict[str, object] | None = None, **function: object) -> str:
    data = S.mixed_session().to_dict()
    data["functions"][0].update(function)
    data.update(top or {})
    return json.dumps(data)


def _deep(text: str) -> str:
    return text.replace('"notes": "deep"', '"notes": ' + "[" * 100_000 + "]" * 100_000)


HOSTILE = {
    "calls-1e400": _session_json().replace('"calls": ', '"calls": 1e400, "x": ', 1),
    "4301-digit-int": _session_json().replace('"calls": ', '"calls": ' + "9" * 4301 + ', "x": ', 1),
    "4000-digit-int": _session_json().replace('"calls": ', '"calls": ' + "9" * 4000 + ', "x": ', 1),
    "nan-seconds": _session_json().replace('"trace_seconds": ', '"trace_seconds": NaN, "x": ', 1),
    "infinite-wall": _session_json().replace('"wall_seconds": ', '"wall_seconds": -Infinity, "x": ', 1),
    "deep-arrays": _deep(_session_json({"notes": "deep"})),
    "name-number": _session_json(name=7),
    "calls-string": _session_json(calls="12"),
    "calls-bool": _session_json(calls=True),
    "negative-traces": _session_json(traces=-1),
    "events-object": _session_json(events={"a": 1}),
    "event-string": _session_json(events=["boom"]),
    "shape-strings": _session_json(events=[{"index": 1, "cause": "x", "seconds": 0,
                                           "signature": [{"path": "x", "kind": "tensor",
                                                          "shape": ["a"]}]}]),
    "keras-list": _session_json(keras=[1, 2]),
    "functions-string": '{"schema": 1, "tool": {"name": "tfretrace"}, "functions": "abc"}',
    "schema-true": _session_json().replace('"schema": 1', '"schema": true'),
    "schema-float": _session_json().replace('"schema": 1', '"schema": 1.0'),
    "notes-number": _session_json({"notes": [1]}),
    "argv-null": _session_json({"argv": None}),
    "label-object": _session_json({"label": {}}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_report_on_hostile_sessions_is_one_line_and_status_2(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(HOSTILE[name], encoding="utf-8")
    assert cli.main(["report", str(path)]) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    _one_error_line(err)
    assert out == ""


def test_lone_surrogates_load_and_render_everywhere(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.json"
    path.write_text(_session_json(name="step\\ud800", location="a\\udcff.py:3"), encoding="utf-8")
    # json.dumps escaped the backslashes: undo that so the file holds a JSON \\ud800 escape.
    path.write_text(path.read_text().replace("\\\\u", "\\u"), encoding="utf-8")
    for output in ("r.txt", "r.html", "r.json"):
        assert cli.main(["report", str(path), "-o", str(tmp_path / output)]) == 0
    assert "step\ufffd" in (tmp_path / "r.txt").read_text(encoding="utf-8")
    assert cli.main(["report", str(path)]) == 0
    assert "step\ufffd" in capsys.readouterr().out


def test_a_failed_rerender_never_truncates_the_existing_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = S.mixed_session().save(tmp_path / "s.json")
    report = tmp_path / "r.txt"
    report.write_text("earlier report")

    def broken(self: TextRenderer, session: Session) -> str:
        return "half a report \udc80"  # not encodable: the write fails midway

    monkeypatch.setattr(_cli_output, "encodable", lambda text: text)
    monkeypatch.setattr(TextRenderer, "render", broken)
    with pytest.raises(UnicodeEncodeError):
        cli.main(["report", str(saved), "-o", str(report)])
    assert report.read_text() == "earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.txt", "s.json"]  # no temp left


def test_session_files_that_are_not_regular_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(SessionFormatError, match="not a regular file"):
        load(fifo)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(SessionFormatError, match="not a regular file"):
        load(tmp_path / "zero.json")


# -- atomic writes and permissions -----------------------------------------------------------


def _file_writes(tree: ast.AST) -> list[int]:
    """Lines that write a file other than through atomic_write_text."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("write_text", "write_bytes", "fdopen", "mkstemp", "NamedTemporaryFile"):
            lines.append(node.lineno)
        elif name == "open":
            modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            modes += [k.value.value for k in node.keywords
                      if k.arg == "mode" and isinstance(k.value, ast.Constant)]
            if any(set(str(m)) & set("wax+") for m in modes):
                lines.append(node.lineno)
    return lines


def test_every_file_write_goes_through_the_atomic_writer() -> None:
    # cli/program.py reopens the terminal's file descriptors when the program closed its streams.
    # run_command.py opens its own handle on the terminal for the live status line.
    allowed = {("io.py", "fdopen"), ("io.py", "mkstemp"),
               ("program.py", "open(fd,"), ("program.py", "open(os.devnull"),
               # fix --verify: the edited program's output streams into its log as it runs, and a
               # copy-on-write clone is made inside the temporary copy of the program.
               ("verify.py", 'open(log, "wb")'), ("workcopy.py", 'open(target, "wb")'),
               ("run_command.py", "open(os.dup(stream.fileno())")}
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for line in _file_writes(ast.parse(source)):
            call = source.splitlines()[line - 1]
            if not any(path.name == f and w in call for f, w in allowed):
                offenders.append(f"{path.relative_to(SRC)}:{line}: {call.strip()}")
    assert offenders == []


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o027])
def test_written_files_follow_the_umask(mask: int, tmp_path: Path) -> None:
    old = os.umask(mask)
    try:
        saved = S.mixed_session().save(tmp_path / "s.json")
        report = _io.atomic_write_text(tmp_path / "r.html", "<p>")
    finally:
        os.umask(old)
    for path in (saved, report):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_save_option_file_has_the_same_mode_as_reports(
    script: Path, monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = os.umask(0o022)
    try:
        assert cli.main(["run", "--save", str(tmp_path / "s.json"), "-o", str(tmp_path / "r.html"),
                         str(script)]) == 0
    finally:
        os.umask(old)
    modes = {stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("s.json", "r.html")}
    assert modes == {0o644}


# -- terminal escapes ------------------------------------------------------------------------


def _escaped_session() -> Session:
    report = S.storm()
    first, second = report.events[0], report.events[1]
    second = second.__class__(**{**second.__dict__, "call_site": f"evil{ESCAPES}.py:3",
                                 "note": f"note {ESCAPES}",
                                 "changes": (Change(f"x{ESCAPES}", "shape", "(1,)", "(2,)"),)})
    report = report.__class__(**{**report.__dict__, "name": f"step{ESCAPES}",
                                 "location": f"loc{ESCAPES}:1", "events": (first, second)})
    return S.session(report, notes=(f"worker {ESCAPES}",), internal_errors=1,
                     internal_error_messages=(f"boom {ESCAPES}",))


def _control_characters(text: str, color: bool) -> list[str]:
    if color:  # colour may use SGR sequences, and nothing else
        import re

        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
            or c in "\u202e"]


@pytest.mark.parametrize("color", [False, True])
def test_text_report_neutralises_terminal_control_sequences(color: bool) -> None:
    text = TextRenderer(width=120, color=color).render(_escaped_session())
    assert _control_characters(text, color) == []
    assert "\\x1b]0;pwned\\x07" in text  # shown, not obeyed


def test_warning_and_budget_texts_neutralise_control_sequences() -> None:
    report = _escaped_session().functions[0]
    message = format_event(report.name, report.location, report.events[1])
    assert _control_characters(message, False) == [] and "\\x1b" in message


def test_terminal_report_from_cli_has_no_raw_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    saved = _escaped_session().save(tmp_path / f"s{chr(27)}[2J.json")
    assert cli.main(["report", str(saved)]) == 0
    out, err = capsys.readouterr()
    assert _control_characters(out, True) == [] and _control_characters(err, False) == []


# -- smaller ones ----------------------------------------------------------------------------


def test_a_folder_with_main_runs_like_python_does(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "helper.py").write_text("VALUE = 'from the folder'\n")
    (app / "__main__.py").write_text("import sys, helper\nprint(helper.VALUE, sys.argv)\n")
    assert cli.main(["run", str(app), "x"]) == 0
    assert capsys.readouterr().out.strip() == f"from the folder {[str(app), 'x']}"


def test_explain_unknown_gives_one_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", "NOPE"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    _one_error_line(err)
    assert err.count("(see") + err.count("did you mean") == 1


def test_the_program_sees_an_absolute_file_and_argv_as_typed(
    tmp_path: Path, monitor: FakeMonitor, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # As `python prog.py`: __file__ is absolute (folder joined, not resolved), argv[0] as typed.
    (tmp_path / "prog.py").write_text(
        "import json, sys\nprint(json.dumps([__file__, sys.argv[0], __name__]))\n"
        "def where():\n    return __file__\n"
    )
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "prog.py"]) == 0
    seen = json.loads(capsys.readouterr().out.splitlines()[0])
    assert seen == [os.path.join(os.getcwd(), "prog.py"), "prog.py", "__main__"]


def test_program_traceback_has_no_runpy_or_tfretrace_frames(
    script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", str(script), "--raise"]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom from the script" in err and str(script) in err
    assert "runpy" not in err and os.sep + "tfretrace" + os.sep not in err.split("tfretrace: ")[0]


def test_traceback_filter_drops_our_frames_in_chained_errors() -> None:
    def ours() -> None:
        raise KeyError("inner")

    ours.__code__ = ours.__code__.replace(co_filename=str(SRC / "_tf_adapter.py"))
    try:
        try:
            ours()
        except KeyError as exc:
            raise RuntimeError("outer") from exc
    except RuntimeError as exc:
        _program.drop_our_frames(exc, set())
        cause = exc.__cause__
    assert cause is not None and cause.__traceback__ is not None
    files = []
    tb = cause.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert files == [__file__]


@pytest.mark.parametrize("value", ["\u00b2", "abc", "-1", "1.5", "\u0663"])
def test_strict_env_garbage_is_a_one_line_error(
    value: str, script: Path, monitor: FakeMonitor, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ValueError, match="must be a non-negative integer") as info:
        importlib.import_module("tfretrace.budget").strict_from_env(object(), {"TFRETRACE_STRICT": value})  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    monkeypatch.setenv("TFRETRACE_STRICT", value)
    assert cli.main(["run", str(script)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    _one_error_line(err)
    assert "TFRETRACE_STRICT" in err and "invalid literal" not in err


# -- attacks beyond the list ---------------------------------------------------------


@pytest.mark.parametrize(
    "program",
    ["import sys\nsys.stdout = None\nsys.stderr = None\nsys.exit(5)\n",
     "import io, sys\nsys.stderr = io.StringIO()\nsys.stderr.close()\nsys.exit(5)\n",
     "import sys\nsys.stderr.close()\nsys.exit(5)\n"],
    ids=["streams-none", "replaced-and-closed", "own-stderr-closed"],
)
def test_program_that_breaks_its_streams_still_gets_its_report(
    program: str, monitor: FakeMonitor, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prog.py").write_text(program)
    saved = (sys.stdout, sys.stderr)
    # The program's sys.stderr is a stream of its own on file descriptor 2 (as python's is), so
    # closing it does not close pytest's.
    sys.stderr = open(os.dup(2), "w", encoding="utf-8")  # noqa: SIM115
    try:
        assert cli.main(["run", "--save", str(tmp_path / "s.json"), str(tmp_path / "prog.py")]) == 5
    finally:
        sys.stdout, sys.stderr = saved
    assert "tfretrace: 6 functions" in capfd.readouterr().err
    assert (tmp_path / "s.json").is_file()


def test_columns_garbage_and_huge_widths_are_harmless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = S.mixed_session().save(tmp_path / "s.json")
    monkeypatch.setenv("COLUMNS", "\u00b2")
    assert cli.main(["report", str(saved)]) == 0
    monkeypatch.setenv("COLUMNS", "10000000")
    assert cli.main(["report", str(saved)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 1000


def test_error_lines_stay_one_line_for_names_with_newlines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", str(tmp_path / "a\nb\x1b[2J.json")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    _one_error_line(err)
    assert "\x1b" not in err


def test_outputs_never_overwrite_the_program(
    script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    before = script.read_text()
    assert cli.main(["run", "--save", str(script), str(script)]) == cli.EXIT_USAGE
    _one_error_line(capsys.readouterr().err)
    assert script.read_text() == before and monitor.installed == []


@pytest.mark.parametrize(
    ("name", "content"),
    [("helper.py", "def helper():\n    return 1\n"),
     ("analysis.ipynb", '{"cells": [], "nbformat": 4}'),
     ("config.json", '{"lr": 0.1}'),
     ("notes.txt", "")],
)
def test_save_never_replaces_a_file_that_is_not_a_session(
    name: str, content: str, script: Path, monitor: FakeMonitor, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `run --save helper.py train.py`: a source file, a notebook, someone's JSON, any name not
    # ending in .json. Refused before the program runs; the file keeps its bytes.
    target = tmp_path / name
    target.write_text(content)
    assert cli.main(["run", "--save", str(target), str(script)]) == cli.EXIT_USAGE
    _one_error_line(capsys.readouterr().err)
    assert target.read_text() == content and monitor.installed == []


def test_save_replaces_an_earlier_session_and_takes_a_new_or_empty_json(
    script: Path, monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    earlier = S.mixed_session().save(tmp_path / "run.json")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    for target in (earlier, empty, tmp_path / "new.JSON"):
        assert cli.main(["run", "--save", str(target), str(script)]) == 0
        assert load(target).argv == (str(script),)
    capsys.readouterr()


# `tfretrace run` with the stand-in monitor, in its own process (the program forks).
_FAKE_RUN = """
import sys, types
sys.path.insert(0, {tests!r})
import sessions as S
from cli_fakes import FakeMonitor
import tfretrace.budget  # loaded on first use: with the real monitor, before the stand-in replaces it
fake = FakeMonitor(S.mixed_session())
module = types.ModuleType("tfretrace.runtime.monitor")
module.install, module.stop, module.current = fake.install, fake.stop_process, fake.current
module.prepare_xla = lambda lower_level=False: None
sys.modules["tfretrace.runtime.monitor"] = module
from tfretrace.cli import app as cli
sys.exit(cli.main(sys.argv[1:]))
"""
_FORKING = """
import os, sys, time
if os.fork() == 0:
    time.sleep(1.0)  # the child outlives its parent
    print("child done", flush=True)
    sys.exit(0)
print("parent done", flush=True)
"""


def test_only_the_process_run_started_reports_and_saves(tmp_path: Path) -> None:
    import subprocess

    program = tmp_path / "forks.py"
    program.write_text(_FORKING)
    saved = tmp_path / "run.json"
    driver = _FAKE_RUN.format(tests=str(Path(__file__).parent))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run(
        [sys.executable, "-c", driver, "run", "--save", str(saved), str(program)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
    )
    # Both processes ran the program; only the parent printed a report and wrote the session
    # (the output pipes close only when the child is gone too, so its output would be here).
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["parent done", "child done"]
    assert result.stderr.count("tfretrace: 6 functions") == 1, result.stderr
    assert result.stderr.count("Re-render:") == 1
    assert load(saved).argv == (str(program),)
    assert saved.stat().st_mtime < time.time() - 0.5  # written by the parent, before the child ended


def test_the_programs_threads_finish_before_the_report(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TFRETRACE_TEST_THREAD", raising=False)
    (tmp_path / "prog.py").write_text(
        "import os, threading, time\n"
        "def work():\n    time.sleep(0.3)\n    os.environ['TFRETRACE_TEST_THREAD'] = 'done'\n"
        "threading.Thread(target=work).start()\n"
    )
    assert cli.main(["run", str(tmp_path / "prog.py")]) == 0
    assert os.environ.get("TFRETRACE_TEST_THREAD") == "done"


def test_the_programs_own_excepthook_is_used(
    monitor: FakeMonitor, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    (tmp_path / "prog.py").write_text(
        "import sys\n"
        "sys.excepthook = lambda t, e, tb: print('custom hook:', t.__name__, e, file=sys.stderr)\n"
        "raise KeyError('boom')\n"
    )
    assert cli.main(["run", str(tmp_path / "prog.py")]) == 1
    err = capsys.readouterr().err
    assert "custom hook: KeyError 'boom'" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["nope", "2", "maybe"])
def test_strict_warn_garbage_is_an_error(value: str) -> None:
    strict = importlib.import_module("tfretrace.budget").strict_from_env
    with pytest.raises(ValueError, match="TFRETRACE_STRICT_WARN must be"):
        strict(object(), {"TFRETRACE_STRICT": "1", "TFRETRACE_STRICT_WARN": value})


def test_pytest_summary_lines_neutralise_control_sequences() -> None:
    from tfretrace.integrations.pytest_support import TestWatch
    from tfretrace.runtime.state import FunctionState

    watch = TestWatch()
    state = FunctionState(("f.py", 1, "step"), f"step{ESCAPES}", f"f{ESCAPES}.py:1", 500)
    state.traces = 1
    watch.monitor._functions[state.key] = state
    lines = watch.summary_lines()
    assert len(lines) == 1 and _control_characters(lines[0], False) == []


def test_writes_go_through_symlinks_and_refuse_special_files(
    tmp_path: Path, script: Path, monitor: FakeMonitor, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "sessions" / "run1.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    S.mixed_session().save(link)
    assert link.is_symlink() and load(real).functions == load(link).functions
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        _io.atomic_write_text(fifo, "x")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert cli.main(["run", "--save", str(fifo), str(script)]) == cli.EXIT_USAGE
    _one_error_line(capsys.readouterr().err)
    assert monitor.installed == []
