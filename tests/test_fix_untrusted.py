"""`tfretrace fix` on sessions that are untrusted data: where it may write, what, and with what text."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from sessions import storm
from tfretrace.cli import main
from tfretrace.fix.applying import apply as apply_mod
from tfretrace.fix.applying.verify import program_command
from tfretrace.fix.core.source import Replacement, SourceReader, Span
from tfretrace.fix.planning.plan import PlanStep
from tfretrace.records.events import KerasInfo
from tfretrace.records.session import Session, load

# A program that runs without TensorFlow: `function` stands in for tf.function, so the source
# has the decorator the plan edits and `tfretrace run` needs no TensorFlow to run it.
PROGRAM = (
    "def function(f=None, **kw):\n"
    "    return f if f is not None else (lambda g: g)\n"
    "\n"
    "\n"
    "@function\n"
    "def train_step(x, lr):\n"
    "    return x * lr\n"
    "\n"
    "\n"
    "out = train_step(2, 3)\n"
)
DECORATOR = Replacement(Span("train.py", 5, 1, 5, 9), "function(reduce_retracing=True)")
CALL_ARG = Replacement(Span("train.py", 10, 20, 10, 21), "tf.constant(3, dtype=tf.int32)")
TRAIN = (
    "import tensorflow as tf\n\n\n@tf.function  # step\ndef train_step(x, lr):\n    return x * lr\n\n\n"
    "out = train_step(x, lr)\n"
)
TF_DECORATOR = Replacement(Span("train.py", 4, 1, 4, 12), "tf.function(reduce_retracing=True)")
TF_CALL = Replacement(Span("train.py", 9, 20, 9, 22), "tf.constant(lr, dtype=tf.float32)")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fix` edits the program in the working directory (or --root), whatever the session says."""
    monkeypatch.chdir(tmp_path)


def step(kind: str, edits: tuple[Replacement, ...], *, before: int = 120, after: int = 1) -> dict[str, object]:
    return PlanStep("shape-changed", kind, "a step", None, edits, before, after, 1.5).to_dict()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recorded(
    root: Path,
    steps: list[dict[str, object]],
    files: dict[str, str | bytes],
    *,
    location: str = "train.py:5",
    session_root: str | None = None,
    hashes: dict[str, str] | None = None,
) -> Path:
    for name, text in files.items():
        data = text if isinstance(text, bytes) else text.encode()
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    known = {n: sha(t if isinstance(t, bytes) else t.encode()) for n, t in files.items()}
    known.update(hashes or {})
    report = replace(storm(), location=location, plan=tuple(steps))
    session = Session(
        functions=(report,), wall_seconds=10.0, root=session_root or str(root), sources=tuple(sorted(known.items()))
    )
    return session.save(root / "run.json")


def one_line_error(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("tfretrace: error: "), err


# -- the session's root does not decide where fix writes -------------------------------------


@pytest.mark.parametrize("hostile_root", ["/", "..", "../elsewhere"])
def test_the_sessions_root_cannot_move_the_writes_out_of_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], hostile_root: str
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (elsewhere / "train.py").write_text(PROGRAM)
    edit = Replacement(replace(DECORATOR.span, path="elsewhere/train.py" if hostile_root == ".." else
                               str(elsewhere / "train.py") if hostile_root == "/" else "train.py"), DECORATOR.text)
    saved = recorded(project, [step("reduce-retracing", (edit,))], {}, session_root=hostile_root,
                     hashes={edit.span.path: sha(PROGRAM.encode())}, location=f"{edit.span.path}:5")
    monkeypatch.chdir(project)
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    one_line_error(capsys.readouterr().err)
    assert (elsewhere / "train.py").read_text() == PROGRAM


def test_verify_copies_and_runs_the_working_directory_not_the_sessions_root(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    marker = tmp_path / "elsewhere-ran"
    (elsewhere / "train.py").write_text(PROGRAM + f"open({str(marker)!r}, 'w').write('ran')\n")
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {"train.py": PROGRAM},
                     session_root="../elsewhere")
    done = subprocess.run([sys.executable, "-m", "tfretrace", "fix", str(saved), "--verify", "--", "python",
                           "train.py"], cwd=project, capture_output=True, text=True, timeout=120, env=_env(),
                          check=False)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_a_symbolic_link_out_of_the_root_is_not_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside.py"
    project.mkdir()
    outside.write_text(PROGRAM)
    (project / "train.py").symlink_to(outside)
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {},
                     hashes={"train.py": sha(PROGRAM.encode())})
    monkeypatch.chdir(project)
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    one_line_error(capsys.readouterr().err)
    assert outside.read_text() == PROGRAM


def test_root_option_is_where_the_edits_land(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {"train.py": PROGRAM}, session_root="/")
    monkeypatch.chdir(tmp_path)
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply", "--root", str(project)]) == 0
    assert "@function(reduce_retracing=True)" in (project / "train.py").read_text()


# -- edits only at the plan's anchors, with text of the step's kind --------------------------


HOSTILE_TEXT = "__import__('os').system('touch pwned')"


@pytest.mark.parametrize(
    ("kind", "edit"),
    [
        # a constant elsewhere in the file, labelled as a signature
        ("input-signature", Replacement(Span("train.py", 1, 0, 1, 12), HOSTILE_TEXT)),
        # the decorator, but not a tf.function declaration
        ("input-signature", Replacement(TF_DECORATOR.span, HOSTILE_TEXT)),
        ("reduce-retracing", Replacement(TF_DECORATOR.span, f"tf.function(reduce_retracing={HOSTILE_TEXT})")),
        ("input-signature", Replacement(TF_DECORATOR.span, f"tf.function(input_signature=[{HOSTILE_TEXT}])")),
        # a call argument wrapped in something other than the tensor conversion of itself
        ("tensor-argument", Replacement(TF_CALL.span, HOSTILE_TEXT)),
        ("tensor-argument", Replacement(TF_CALL.span, f"tf.constant({HOSTILE_TEXT})")),
        ("cast-dtype", Replacement(TF_CALL.span, f"tf.cast(lr, {HOSTILE_TEXT})")),
        ("zero-state", Replacement(TF_CALL.span, "tf.zeros([1], dtype=tf.float32)")),  # lr is no None
        ("tuple-argument", Replacement(TF_CALL.span, "(lr,)")),  # lr is no list literal
        ("tuple-argument", Replacement(TF_CALL.span, f"({HOSTILE_TEXT},)")),
        # the call's callee is not an argument
        ("tensor-argument", Replacement(Span("train.py", 9, 6, 9, 16), "tf.constant(train_step)")),
        ("drop-remainder", Replacement(Span("train.py", 9, 22, 9, 22), ", drop_remainder=True")),  # no .batch()
        ("some-new-kind", Replacement(TF_CALL.span, "tf.constant(lr)")),
    ],
)
def test_edits_off_the_plans_anchors_or_of_another_kind_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, edit: Replacement
) -> None:
    files = {"train.py": TRAIN.replace("import tensorflow as tf\n", "import tensorflow as tf\nPORT = 8080\n", 1)
             if edit.span.line == 1 else TRAIN}
    if edit.span.line == 1:
        edit = Replacement(Span("train.py", 2, 0, 2, 11), edit.text)
        files = {"train.py": "import tensorflow as tf\nPORT = 8080\n\n@tf.function  # step\n"
                 "def train_step(x, lr):\n    return x * lr\n"}
    saved = recorded(tmp_path, [step(kind, (edit,))], files, location="train.py:4")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    one_line_error(capsys.readouterr().err)
    assert (tmp_path / "train.py").read_text() == files["train.py"]


def test_edits_at_their_anchors_with_their_kinds_text_are_made(tmp_path: Path) -> None:
    signature = Replacement(TF_DECORATOR.span, "tf.function(input_signature=[tf.TensorSpec(shape=[None, 3], "
                            "dtype=tf.float32), tf.TensorSpec(shape=[], dtype=tf.float32)])")
    saved = recorded(tmp_path, [step("reduce-retracing", (TF_DECORATOR,), after=3),
                                step("input-signature", (signature,), before=3),
                                step("tensor-argument", (TF_CALL,))], {"train.py": TRAIN}, location="train.py:4")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    text = (tmp_path / "train.py").read_text()
    assert "@tf.function(input_signature=[tf.TensorSpec(shape=[None, 3]" in text
    assert "train_step(x, tf.constant(lr, dtype=tf.float32))" in text


# -- edit texts are bounded before any parser sees them --------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "tf.function(input_signature=[" + "(" * 3000 + "1" + ")" * 3000 + "])",  # SIGSEGV in the parser
        "tf.function(input_signature=[" + "+".join(["tf.x"] * 40000) + "])",  # 20 s, then a crash
        "tf.function(" * 60 + ")" * 60,
    ],
)
def test_huge_or_deeply_nested_edit_texts_are_one_line_errors(tmp_path: Path, text: str) -> None:
    saved = recorded(tmp_path, [step("input-signature", (Replacement(TF_DECORATOR.span, text),))],
                     {"train.py": TRAIN}, location="train.py:4")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tfretrace", "fix", str(saved), "--unsafe-fixes"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(apply_mod.__file__).parents[2])})
    assert done.returncode == 2, done.stderr[-2000:]
    one_line_error(done.stderr)
    assert time.monotonic() - started < 30


def test_a_closing_insertion_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = "import tensorflow as tf\n\nds = tf.data.Dataset.range(10).batch(4)\n"
    insertion = Replacement(Span("data.py", 3, 38, 3, 38), "), print(1")
    saved = recorded(tmp_path, [step("drop-remainder", (insertion,))], {"data.py": data, "train.py": TRAIN},
                     location="train.py:4")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    one_line_error(capsys.readouterr().err)
    assert (tmp_path / "data.py").read_text() == data


# -- edit paths that are not regular files ---------------------------------------------------


@pytest.mark.parametrize("special", ["fifo", "zero"])
def test_edit_paths_that_are_not_regular_files_are_refused(tmp_path: Path, special: str) -> None:
    target = tmp_path / "pipe.py"
    if special == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "dev").mkdir()
        target = tmp_path / "dev" / "zero.py"
        os.mknod(target, 0o666 | 0o020000, os.makedev(1, 5))  # a character device, like /dev/zero
    rel = target.relative_to(tmp_path).as_posix()
    edit = Replacement(Span(rel, 1, 0, 1, 1), "tf.constant(x)")
    saved = recorded(tmp_path, [step("tensor-argument", (edit,))], {"train.py": TRAIN}, location="train.py:4",
                     hashes={rel: "0" * 64})
    done = subprocess.run([sys.executable, "-m", "tfretrace", "fix", str(saved), "--unsafe-fixes"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(apply_mod.__file__).parents[2])})
    assert done.returncode == 2
    one_line_error(done.stderr)


# -- --apply: all files or none, bytes as they were ------------------------------------------


def test_apply_rolls_back_on_keyboard_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = "import tensorflow as tf\n\nds = tf.data.Dataset.range(10).batch(4)\n"
    batch = Replacement(Span("data.py", 3, 38, 3, 38), ", drop_remainder=True")
    saved = recorded(tmp_path, [step("reduce-retracing", (TF_DECORATOR,)), step("drop-remainder", (batch,))],
                     {"data.py": data, "train.py": TRAIN}, location="train.py:4")
    real = apply_mod.atomic_write_text
    calls: list[object] = []

    def interrupted(path: object, text: str, **kw: str) -> object:
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(path, text, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(apply_mod, "atomic_write_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["fix", str(saved), "--unsafe-fixes", "--apply"])
    assert (tmp_path / "data.py").read_text() == data and (tmp_path / "train.py").read_text() == TRAIN


def test_apply_keeps_crlf_line_endings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crlf = TRAIN.replace("\n", "\r\n").encode()
    saved = recorded(tmp_path, [step("reduce-retracing", (TF_DECORATOR,))], {"train.py": crlf},
                     location="train.py:4")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    after = (tmp_path / "train.py").read_bytes()
    assert after == crlf.replace(b"@tf.function  #", b"@tf.function(reduce_retracing=True)  #")


def test_the_hash_check_sees_line_endings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crlf = TRAIN.replace("\n", "\r\n").encode()
    # The session hashed the LF text; the file on disk now has CRLF endings: it changed.
    saved = recorded(tmp_path, [step("reduce-retracing", (TF_DECORATOR,))], {"train.py": crlf},
                     location="train.py:4", hashes={"train.py": sha(TRAIN.encode())})
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    assert "changed since" in capsys.readouterr().err
    assert (tmp_path / "train.py").read_bytes() == crlf


# -- reading source as Python does -----------------------------------------------------------


@pytest.mark.parametrize("odd", ["\f", "\u2028", "\x1c", "\x85"])
def test_line_separators_inside_strings_do_not_shift_the_edits(tmp_path: Path, odd: str) -> None:
    text = TRAIN.replace("\n\n\n@tf", f'\nNAME = "a{odd}b"\n\n@tf', 1)
    saved = recorded(tmp_path, [step("tensor-argument", (TF_CALL,))], {"train.py": text}, location="train.py:4")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    assert (tmp_path / "train.py").read_bytes().decode() == text.replace(
        "train_step(x, lr)\n", "train_step(x, tf.constant(lr, dtype=tf.float32))\n")


@pytest.mark.parametrize(
    ("prefix", "encoding"), [(b"\xef\xbb\xbf", "utf-8"), (b"# -*- coding: latin-1 -*-\n", "latin-1")]
)
def test_a_bom_or_a_coding_cookie_reads_like_python(tmp_path: Path, prefix: bytes, encoding: str) -> None:
    body = TRAIN.replace("# step", "# \u00e9tape").encode(encoding)
    data = prefix + body
    shift = 1 if not prefix.startswith(b"\xef") else 0
    (tmp_path / "train.py").write_bytes(data)
    definition = SourceReader(tmp_path).function_at(f"train.py:{4 + shift}", "train_step")
    assert definition is not None and definition.decorator_text == "tf.function"
    edit = Replacement(replace(TF_DECORATOR.span, line=4 + shift, end_line=4 + shift), TF_DECORATOR.text)
    saved = recorded(tmp_path, [step("reduce-retracing", (edit,))], {"train.py": data},
                     location=f"train.py:{4 + shift}")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    after = (tmp_path / "train.py").read_bytes()
    assert after == data.replace(b"@tf.function  #", b"@tf.function(reduce_retracing=True)  #")


def test_a_deeply_nested_valid_file_is_a_one_line_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = TRAIN + "DEEP = " + "[" * 150 + "]" * 150 + "\n"
    saved = recorded(tmp_path, [step("reduce-retracing", (TF_DECORATOR,))], {"train.py": text},
                     location="train.py:4")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) in (0, 2)
    err = capsys.readouterr().err
    assert not err or err.count("\n") == 1


# -- --verify: a copy, and nothing but the copy ----------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(apply_mod.__file__).parents[2])}


def test_verify_never_writes_through_a_link_into_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "train.py").write_text(PROGRAM)
    (project / "train.py").symlink_to(project / "src" / "train.py")  # absolute, into the project
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {},
                     hashes={"train.py": sha(PROGRAM.encode())})
    done = subprocess.run([sys.executable, "-m", "tfretrace", "fix", str(saved), "--verify", "--", "python",
                           "train.py"], cwd=project, capture_output=True, text=True, timeout=120, env=_env(),
                          check=False)
    assert done.returncode in (0, 2), done.stderr
    assert (project / "src" / "train.py").read_text() == PROGRAM


def test_verify_cleans_up_and_stops_the_program_on_sigterm(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    marker = tmp_path / "where"
    program = PROGRAM + f"import os, time\nopen({str(marker)!r}, 'w').write(f'{{os.getpid()}} {{os.getcwd()}}')\n" \
        "time.sleep(120)\n"
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {"train.py": program})
    proc = subprocess.Popen([sys.executable, "-m", "tfretrace", "fix", str(saved), "--verify", "--", "python",
                             "train.py"], cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=_env())
    deadline = time.monotonic() + 90
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    pid_text, copy = marker.read_text().split(" ", 1)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        for _ in range(20):  # the edited program is gone (not merely a zombie of another parent)
            os.kill(int(pid_text), 0)
            time.sleep(0.25)
    assert not Path(copy).exists()
    assert (project / "train.py").read_text() == program


def test_verify_with_a_read_only_session_still_applies(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {"train.py": PROGRAM})
    folder = tmp_path / "sessions"
    folder.mkdir()
    moved = saved.rename(folder / "run.json")
    os.chmod(moved, 0o444)
    os.chmod(folder, 0o555)
    try:
        if os.access(moved, os.W_OK):
            pytest.skip("running as root: permissions do not stop this process from writing")
        done = subprocess.run([sys.executable, "-m", "tfretrace", "fix", str(moved), "--apply", "--unsafe-fixes",
                               "--verify", "--", "python", "train.py"], cwd=project, capture_output=True,
                              text=True, timeout=120, env=_env(), check=False)
    finally:
        os.chmod(folder, 0o755)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert "@function(reduce_retracing=True)" in (project / "train.py").read_text()


def test_verify_records_into_a_session_it_cannot_replace_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfretrace.cli import fix_command

    project = tmp_path / "project"
    project.mkdir()
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {"train.py": PROGRAM})

    def refuse(*args: object, **kw: object) -> None:
        raise PermissionError(13, "Permission denied", str(saved))

    monkeypatch.setattr(fix_command, "atomic_write_text", refuse)
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", str(Path(apply_mod.__file__).parents[2]))
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply", "--verify", "--", "python", "train.py"]) == 0
    assert "@function(reduce_retracing=True)" in (project / "train.py").read_text()
    assert "run.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "program", "flags"),
    [
        (["python", "-W", "ignore", "train.py"], ["train.py"], ["-W", "ignore"]),
        (["python3", "-Wignore", "-u", "train.py", "--lr", "1"], ["train.py", "--lr", "1"], ["-Wignore", "-u"]),
        (["python", "-X", "dev", "-m", "pkg.train", "-W"], ["-m", "pkg.train", "-W"], ["-X", "dev"]),
        (["python", "-uW", "ignore", "train.py"], ["train.py"], ["-uW", "ignore"]),
        (["train.py", "-W", "x"], ["train.py", "-W", "x"], []),
    ],
)
def test_verify_parses_the_interpreters_options(command: list[str], program: list[str], flags: list[str]) -> None:
    assert program_command(command) == (flags, program)


# -- --verify on a real project: data not copied, .gitignore, a log, a timeout ---------------


def _project(tmp_path: Path, extra: str) -> tuple[Path, Path]:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)  # a repository: its .gitignore counts
    (project / "data").mkdir()
    with open(project / "data" / "big.bin", "wb") as handle:
        handle.truncate(200 * 2**20)  # 200 MiB (sparse: cheap to make, not to copy)
    (project / "outputs").mkdir()
    (project / "outputs" / "model.ckpt").write_text("weights")
    (project / ".gitignore").write_text("outputs/\n")
    saved = recorded(project, [step("reduce-retracing", (DECORATOR,))], {"train.py": PROGRAM + extra})
    return project, saved


def _verify(project: Path, saved: Path, *options: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tfretrace", "fix", str(saved), "--unsafe-fixes", *options,
                           "--verify", "--", "python", "train.py"], cwd=project, capture_output=True, text=True,
                          timeout=timeout, env=_env(), check=False)


def _can_clone(folder: Path) -> bool:
    from tfretrace.fix.applying.workcopy import _clone

    (folder / "probe").write_bytes(b"x")
    return _clone(folder / "probe", folder / "probe.clone")


PROBE = (
    "import os\n"
    "print('data is a link:', os.path.islink('data/big.bin'), os.path.getsize('data/big.bin'))\n"
    "print('ignored output copied:', os.path.exists('outputs/model.ckpt'))\n"
)


def test_verify_never_copies_large_data_it_cannot_clone_unless_named(tmp_path: Path) -> None:
    project, saved = _project(tmp_path, PROBE)
    done = _verify(project, saved)
    if _can_clone(tmp_path):
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 2
        one_line_error(done.stderr)
        assert "data/big.bin" in done.stderr and "--link-data" in done.stderr
    done = _verify(project, saved, "--link-data", "data")
    assert done.returncode == 0, done.stderr
    assert re.search(r"Verified on a copy in \d+\.\d s", done.stdout)
    log = project / "run.verify.log"
    assert str(log) in done.stdout  # the program's output is kept, and the log is named
    output = log.read_text()
    assert f"data is a link: True {200 * 2**20}" in output
    assert "ignored output copied: False" in output  # .gitignore honoured
    assert (project / "train.py").read_text() == PROGRAM + PROBE
    assert (project / "data" / "big.bin").stat().st_size == 200 * 2**20


def test_verify_reports_linked_data_the_program_changed(tmp_path: Path) -> None:
    project, saved = _project(tmp_path, "open('data/big.bin', 'ab').write(b'x')\n")
    done = _verify(project, saved, "--link-data", "data")
    assert done.returncode == 1
    assert "data/big.bin" in done.stderr and "linked data" in done.stderr


def test_verify_keeps_files_the_program_creates_in_a_linked_folder_in_the_copy(tmp_path: Path) -> None:
    project, saved = _project(tmp_path, "import os\nos.makedirs('data/cache', exist_ok=True)\n"
                              "open('data/cache/index.txt', 'w').write('built')\n"
                              "open('data/new.txt', 'w').write('x')\nos.replace('data/new.txt', 'data/moved.txt')\n")
    done = _verify(project, saved, "--link-data", "data")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (project / "data").iterdir()) == ["big.bin"]  # nothing landed in the original


def test_verify_reports_a_file_created_in_the_original_of_a_linked_folder(tmp_path: Path) -> None:
    # A folder linked whole from inside a named folder (a link to a sub-folder) still leads to the
    # original: what the program creates there is seen, by the original folder's time.
    project, saved = _project(tmp_path, "open('data/shards/new.bin', 'w').write('x')\n")
    (tmp_path / "shards").mkdir()
    (project / "data" / "shards").symlink_to(tmp_path / "shards")
    done = _verify(project, saved, "--link-data", "data")
    assert done.returncode == 1
    assert "linked data" in done.stderr and "shards" in done.stderr


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_link_data_may_be_an_absolute_path_inside_the_folder(tmp_path: Path, form: str) -> None:
    project, saved = _project(tmp_path, PROBE)
    named = str(project / "data") if form == "absolute" else "data"
    done = _verify(project, saved, "--link-data", named)
    assert done.returncode == 0, done.stderr
    assert f"data is a link: True {200 * 2**20}" in (project / "run.verify.log").read_text()


@pytest.mark.parametrize("outside", ["/etc", "../elsewhere", "data/../../elsewhere"])
def test_link_data_outside_the_folder_is_refused(tmp_path: Path, outside: str) -> None:
    project, saved = _project(tmp_path, "")
    done = _verify(project, saved, "--link-data", outside)
    assert done.returncode == 2
    one_line_error(done.stderr)
    assert "--link-data" in done.stderr and "not a path inside" in done.stderr


def test_verify_stops_the_program_at_the_timeout(tmp_path: Path) -> None:
    marker = tmp_path / "where"
    project, saved = _project(
        tmp_path, f"import os, time\nopen({str(marker)!r}, 'w').write(os.getcwd())\ntime.sleep(120)\n"
    )
    started = time.monotonic()
    # The program imports no TensorFlow: long enough for `tfretrace run` to start it on a busy machine.
    done = _verify(project, saved, "--link-data", "data", "--timeout", "12")
    assert time.monotonic() - started < 60
    assert done.returncode == 1 and "--timeout" in done.stderr
    assert not Path(marker.read_text()).exists()  # the copy is gone


def test_verify_shows_progress_and_elapsed_time_on_a_terminal() -> None:
    import io

    from tfretrace.fix.applying.progress import Status

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with Status(stream) as shown:
        shown.task("copying the program", 3)
        shown.advance(3)
        time.sleep(0.3)
    assert "copying the program" in stream.getvalue() and "0:00:0" in stream.getvalue()
    quiet = io.StringIO()
    with Status(quiet) as shown:
        shown.task("copying the program", 3)
    assert quiet.getvalue() == ""


def test_call_form_functions_take_call_site_edits_at_the_name_they_are_bound_to(tmp_path: Path) -> None:
    program = ("import tensorflow as tf\n\n\ndef f(x, n):\n    return x * n\n\n\ntf_f = tf.function(f)\n"
               "out = tf_f(x, 3)\n")
    edit = Replacement(Span("train.py", 9, 14, 9, 15), "tf.constant(3, dtype=tf.int32)")
    saved = recorded(tmp_path, [step("tensor-argument", (edit,))], {"train.py": program}, location="train.py:4")
    report = json.loads(saved.read_text())
    report["functions"][0]["name"] = "f"
    saved.write_text(json.dumps(report))
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    assert "out = tf_f(x, tf.constant(3, dtype=tf.int32))" in (tmp_path / "train.py").read_text()


# -- the edit kinds that move statements, rewrite a body or replace predict ------------------

MOVES_PROGRAM = (
    "import tensorflow as tf\n"  # 1
    "\n\n"
    "class Config:\n"  # 4
    "    def __init__(self, rate):\n"
    "        self.rate = rate\n"
    "\n\n"
    "def square(x):\n"  # 9
    "    return x * x\n"
    "\n\n"
    "def outer(n):\n"  # 13
    "    @tf.function\n"
    "    def step(x):\n"  # 15
    "        return x + 1\n"
    "\n"
    "    return step(n)\n"
    "\n\n"
    "def compute(x, cfg):\n"  # 21
    "    return x * cfg.rate\n"
    "\n\n"
    "def total(losses, scale):\n"  # 25
    "    return tf.add_n(losses) * tf.constant(scale)\n"
    "\n\n"
    "for epoch in range(3):\n"  # 29
    "    loss_fn = tf.function(compute)\n"
    "    ds = tf.data.Dataset.range(4).map(lambda v: v + 1)\n"
    "    cfg = Config(0.5)\n"
    "    loss_fn(1.0, cfg)\n"  # 33
    "    total([1.0], 2.0)\n"
    "\n"
    "out = tf.vectorized_map(square, tf.ones([3]))\n"  # 36
    "y = model.predict(x, verbose=0)\n"  # 37
    "z = model.predict(x, verbose=0)\n"  # 38: another site
    "\n\n"
    "def make_scale(k):\n"  # 41
    "    @tf.function\n"
    "    def scale(x):\n"  # 43
    "        return x * k\n"
    "\n"
    "    return scale\n"
    "\n\n"
    "for _ in range(2):\n"  # 49
    "    scaler = make_scale(2.0)\n"
    "    scaler(1.0)\n"  # 51
)
# Which recorded function each kind's edits belong to: its name, def line and call site.
MOVE_FUNCTIONS = {
    "hoist-def": ("outer.<locals>.step", 15, None),
    "input-signature": ("outer.<locals>.step", 15, None),
    "hoist-wrap": ("compute", 21, 33),
    "hoist-object": ("compute", 21, 33),
    "hoist-pipeline": ("map_fn", 31, 31),
    "wrap-vectorized-map": ("loop_fn", 36, 36),
    "tensor-argument": ("total", 25, 34),
    "keras-call": ("predict", 37, 37),
    "hoist-factory-call": ("make_scale.<locals>.scale", 43, 51),
    # an input_signature after hoist-wrap: written into the moved tf.function(...) line
    "input-signature@wrap": ("compute", 21, 33),
}
WRAP_SIGNATURE = "tf.function(compute, input_signature=[tf.TensorSpec(shape=[], dtype=tf.float32)])"
BEFORE_LOOP = Span("prog.py", 29, 0, 29, 0)


def _derived(kind: str) -> tuple[Replacement, ...]:
    """The edits tfretrace itself makes for ``kind`` in MOVES_PROGRAM (the planner's own functions)."""
    from tfretrace.fix.core import hoist
    from tfretrace.fix.kinds import hoist_factory_call, hoist_object, wrap_vectorized_map

    reader = SourceReader(".")
    if kind in ("hoist-def", "input-signature"):
        definition = reader.function_at("prog.py:15", "step")
        new = "tf.function(input_signature=[tf.TensorSpec(shape=[], dtype=tf.int32)])"
        found = hoist.hoist_edits(definition, reader, new if kind == "input-signature" else None)
    elif kind == "input-signature@wrap":
        found = hoist.wrap_moved(reader, reader.function_at("prog.py:21", "compute"), WRAP_SIGNATURE)
    elif kind in ("hoist-wrap", "hoist-pipeline"):
        found = hoist.pipeline_edits(reader, "prog.py:30" if kind == "hoist-wrap" else "prog.py:31")
    elif kind == "hoist-object":
        found = hoist_object.object_edits(reader, "prog.py:33", "cfg")
    elif kind == "hoist-factory-call":
        made = hoist_factory_call.factory_edits(reader, reader.function_at("prog.py:43", "scale"), "prog.py:51")
        found = None if made is None else made[1]
    elif kind == "wrap-vectorized-map":
        wrapped = wrap_vectorized_map.vectorized_edits(reader, "prog.py:36")
        found = None if wrapped is None else wrapped[1]
    elif kind == "tensor-argument":
        found = (Replacement(Span("prog.py", 26, 11, 26, 27), "tf.reduce_sum(losses, axis=0)"),
                 Replacement(Span("prog.py", 26, 30, 26, 48), "tf.convert_to_tensor(scale)"),
                 Replacement(Span("prog.py", 34, 10, 34, 15), "tf.stack([1.0])"))
    else:
        found = (Replacement(Span("prog.py", 37, 4, 37, 31), "model(x, training=False).numpy()"),)
    assert found is not None, kind
    return tuple(found)


def _moves_session(tmp_path: Path, kind: str, edits: tuple[Replacement, ...]) -> Path:
    name, line, site = MOVE_FUNCTIONS[kind]
    report = storm(name=name)
    events = tuple(replace(e, call_site=None if site is None else f"prog.py:{site}") for e in report.events)
    (tmp_path / "prog.py").write_text(MOVES_PROGRAM)
    keras = KerasInfo("model", "Sequential", "predict") if kind == "keras-call" else None
    plan = (step(kind.split("@")[0], edits),)
    report = replace(report, location=f"prog.py:{line}", events=events, plan=plan, keras=keras)
    session = Session(functions=(report,), wall_seconds=10.0, root=str(tmp_path),
                      sources=(("prog.py", sha(MOVES_PROGRAM.encode())),))
    return session.save(tmp_path / "run.json")


@pytest.mark.parametrize("kind", sorted(MOVE_FUNCTIONS))
def test_the_new_kinds_edits_at_their_anchors_are_made(tmp_path: Path, kind: str) -> None:
    (tmp_path / "prog.py").write_text(MOVES_PROGRAM)
    saved = _moves_session(tmp_path, kind, _derived(kind))
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    assert (tmp_path / "prog.py").read_text() != MOVES_PROGRAM


def _swap(kind: str, index: int, text: str) -> tuple[Replacement, ...]:
    edits = list(_derived(kind))
    edits[index] = Replacement(edits[index].span, text)
    return tuple(edits)


HOSTILE_LINE = HOSTILE_TEXT + "\n"
NEW_KIND_HOSTILE: list[tuple[str, Callable[[], tuple[Replacement, ...]]]] = [
    # the def moved with a statement of the session's own, or with another body
    ("hoist-def", lambda: _swap("hoist-def", 1, _derived("hoist-def")[1].text + HOSTILE_LINE)),
    ("hoist-def", lambda: _swap("hoist-def", 1, _derived("hoist-def")[1].text.replace("x + 1", HOSTILE_TEXT))),
    # a removal of another def, with its def written back: not the recorded function's move
    ("hoist-def", lambda: (Replacement(Span("prog.py", 9, 0, 10, 16), ""),
                           Replacement(Span("prog.py", 4, 0, 4, 0), "def square(x):\n    return x * x\n"))),
    # only the removal: the def would be gone
    ("hoist-def", lambda: _derived("hoist-def")[:1]),
    # the moved def's decorator set to something a signature edit does not write
    ("input-signature", lambda: _swap("input-signature", 1, _derived("input-signature")[1].text.replace(
        "tf.TensorSpec(shape=[], dtype=tf.int32)", HOSTILE_TEXT))),
    ("hoist-wrap", lambda: _swap("hoist-wrap", 1, HOSTILE_LINE)),
    ("hoist-wrap", lambda: (Replacement(BEFORE_LOOP, HOSTILE_LINE),)),
    # the pipeline's move used for the config object's line
    ("hoist-pipeline", lambda: _derived("hoist-object")),
    ("hoist-pipeline", lambda: _swap("hoist-pipeline", 1, "ds = tf.data.Dataset.range(4).map(eval)\n")),
    ("hoist-object", lambda: _swap("hoist-object", 1, "cfg = Config(__import__('os').system('x'))\n")),
    ("hoist-object", lambda: _derived("hoist-object")[1:]),  # made twice: before the loop and in it
    ("hoist-factory-call", lambda: _swap("hoist-factory-call", 1, "scaler = make_scale(eval('1'))\n")),
    # the moved tf.function(...) line declared with something else, or made of another function
    ("input-signature@wrap", lambda: _swap("input-signature@wrap", 1, _derived("input-signature@wrap")[1].text.replace(
        "tf.TensorSpec(shape=[], dtype=tf.float32)", HOSTILE_TEXT))),
    ("input-signature@wrap", lambda: _swap("input-signature@wrap", 1, _derived("input-signature@wrap")[1].text.replace(
        "tf.function(compute,", "tf.function(square,"))),
    ("input-signature@wrap", lambda: _derived("input-signature@wrap")[1:]),  # made before the loop and in it
    ("hoist-factory-call", lambda: _derived("hoist-factory-call")[1:]),  # called twice: before the loop and in it
    # the config object's move presented as the factory's
    ("hoist-factory-call", lambda: _derived("hoist-object")),
    ("wrap-vectorized-map", lambda: _swap("wrap-vectorized-map", 0, _derived("wrap-vectorized-map")[0].text.replace(
        "return tf.vectorized_map(square, elems)", f"return {HOSTILE_TEXT}"))),
    ("wrap-vectorized-map", lambda: _swap("wrap-vectorized-map", 1, HOSTILE_TEXT)),
    ("tensor-argument", lambda: _swap("tensor-argument", 0, f"tf.reduce_sum({HOSTILE_TEXT}, axis=0)")),
    ("tensor-argument", lambda: _swap("tensor-argument", 1, f"tf.convert_to_tensor({HOSTILE_TEXT})")),
    ("tensor-argument", lambda: _swap("tensor-argument", 2, f"tf.stack({HOSTILE_TEXT})")),
    # the body's rewrite used on a call outside the function
    ("tensor-argument", lambda: (Replacement(Span("prog.py", 36, 32, 36, 44), "tf.convert_to_tensor([3])"),)),
    ("keras-call", lambda: _swap("keras-call", 0, f"model(x, training=False).numpy() or {HOSTILE_TEXT}")),
    ("keras-call", lambda: _swap("keras-call", 0, "model(y, training=False).numpy()")),
    ("keras-call", lambda: (Replacement(Span("prog.py", 36, 6, 36, 45), "square(x, training=False).numpy()"),)),
    # a predict call the recorded function was not called at (line 37 is its site)
    ("keras-call", lambda: (Replacement(Span("prog.py", 38, 4, 38, 31), "model(x, training=False).numpy()"),)),
]


@pytest.mark.parametrize(("kind", "make"), NEW_KIND_HOSTILE)
def test_the_new_kinds_edits_off_their_anchors_or_with_foreign_text_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, make: Callable[[], tuple[Replacement, ...]]
) -> None:
    from tfretrace.fix.applying.anchors import AnchorError, anchors_for, check_step

    (tmp_path / "prog.py").write_text(MOVES_PROGRAM)
    edits = make()
    saved = _moves_session(tmp_path, kind, edits)
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    one_line_error(capsys.readouterr().err)
    assert (tmp_path / "prog.py").read_text() == MOVES_PROGRAM
    # Refused by the anchors (not by a later parse): the check itself says no.
    (report,) = load(saved).functions
    with pytest.raises(AnchorError):
        check_step(kind.split("@")[0], anchors_for(report, SourceReader(tmp_path)), edits)


def test_a_def_longer_than_an_edit_text_is_moved_whole(tmp_path: Path) -> None:
    # A moved def is the file's own lines, not a decorator: its size is not bounded like one.
    from tfretrace.fix.applying.rewrite import MAX_EDIT_CHARS

    padding = "".join(f"        x = x + {i}  # a long training step, line {i}\n" for i in range(150))
    program = MOVES_PROGRAM.replace("        return x + 1\n", padding + "        return x + 1\n")
    assert len(padding) > MAX_EDIT_CHARS
    (tmp_path / "prog.py").write_text(program)
    from tfretrace.fix.core import hoist

    reader = SourceReader(".")
    edits = hoist.hoist_edits(reader.function_at("prog.py:15", "step"), reader)
    assert edits is not None
    report = replace(storm(name="outer.<locals>.step"), location="prog.py:15", plan=(step("hoist-def", edits),))
    saved = Session(functions=(report,), wall_seconds=1.0, root=".", sources=(("prog.py", sha(program.encode())),)
                    ).save(tmp_path / "run.json")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 0
    text = (tmp_path / "prog.py").read_text()
    assert text.index("\ndef step(x):") < text.index("\ndef outer(n):") and text.count("x = x + 149") == 1
    # The same size of text of the session's own is still refused.
    hostile = Replacement(edits[1].span, edits[1].text.replace("x = x + 1 ", HOSTILE_TEXT + " ", 1))
    (tmp_path / "prog.py").write_text(program)
    report = replace(report, plan=(step("hoist-def", (edits[0], hostile)),))
    saved = Session(functions=(report,), wall_seconds=1.0, root=".", sources=(("prog.py", sha(program.encode())),)
                    ).save(tmp_path / "run.json")
    assert main(["fix", str(saved), "--unsafe-fixes", "--apply"]) == 2
    assert (tmp_path / "prog.py").read_text() == program


def test_the_copy_keeps_the_edited_program_where_git_ignores_its_folder(tmp_path: Path) -> None:
    # make demo runs its copy of the example in the git-ignored .demo/: --verify must copy and
    # edit that file, and still leave out everything else git ignores.
    from tfretrace.fix.applying.workcopy import plan_copy

    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(".demo/\n")
    (tmp_path / ".demo").mkdir()
    (tmp_path / ".demo" / "train.py").write_text("print(1)\n")
    (tmp_path / ".demo" / "scratch.txt").write_text("x")
    assert ".demo/train.py" not in plan_copy(tmp_path).copy
    copied = plan_copy(tmp_path, keep=[".demo/train.py"]).copy
    assert ".demo/train.py" in copied and ".demo/scratch.txt" not in copied


# The program starts a sleeper in a session of its own: directly (its child, working in "/"), or
# through a parent that exits at once (a daemon: reparented, working in the copy).
_SETSID_CHILD = (
    "import subprocess, sys, time\n"
    "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], cwd='/', "
    "start_new_session=True)\n"
    "open({marker!r}, 'w').write(str(helper.pid))\n"
    "time.sleep(120)\n"
)
_DAEMON = (
    "import subprocess, sys, time\n"
    "code = 'import subprocess, sys; p = subprocess.Popen([sys.executable, \"-c\", \"import time; "
    "time.sleep(300)\"], start_new_session=True, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.DEVNULL); print(p.pid)'\n"
    "pid = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True).stdout.strip()\n"
    "open({marker!r}, 'w').write(pid)\n"
    "time.sleep(120)\n"
)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's reaping is left


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the processes are found through /proc")
@pytest.mark.parametrize("helper", [_SETSID_CHILD, _DAEMON], ids=["setsid-child", "daemon"])
def test_verify_timeout_stops_what_the_program_started_in_its_own_session(tmp_path: Path, helper: str) -> None:
    marker = tmp_path / "helper.pid"
    project, saved = _project(tmp_path, helper.format(marker=str(marker)))
    done = _verify(project, saved, "--link-data", "data", "--timeout", "12")
    assert done.returncode == 1 and "--timeout" in done.stderr
    pid = int(marker.read_text())
    try:
        deadline = time.monotonic() + 5
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
