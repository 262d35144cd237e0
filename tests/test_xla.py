"""XLA compiles: counted against TensorFlow's own per-cluster count, explained per leaf, stderr passed through."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tfretrace._tf import xla, xla_log

HERE = Path(__file__).resolve().parent
_TF_COMPILED = re.compile(rb"device_compilation_profiler\.cc:\d+\] Compiled (\S+) (\d+) times")


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    """One subprocess for every real-TF scenario (tests/xla_scenarios.py)."""
    env = dict(os.environ)
    # The program asks for TensorFlow's per-compile count itself: those lines are the user's and
    # pass through, an independent record to check tfretrace against. tfretrace adds the
    # per-argument lines (xla_compiler=2) on its own and must swallow all of them.
    env["TF_CPP_VMODULE"] = "device_compilation_profiler=1"
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    env.pop("TFRETRACE_STRICT", None)
    done = subprocess.run(
        [sys.executable, str(HERE / "xla_scenarios.py")],
        capture_output=True, env=env, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    data = json.loads(done.stdout.decode().strip().splitlines()[-1])
    data["stderr"] = done.stderr
    return data


def _tf_counts(stderr: bytes) -> dict[str, int]:
    counts: dict[str, int] = {}
    for cluster, n in _TF_COMPILED.findall(stderr):
        counts[cluster.decode()] = max(counts.get(cluster.decode(), 0), int(n))
    return counts


def _recorded(function: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in function["xla_events"]:
        counts[event["cluster"]] = counts.get(event["cluster"], 0) + 1
    return counts


def _changes(function: dict[str, Any]) -> list[list[str]]:
    return [[c["text"] for c in e["changes"]] for e in function["xla_events"]]


@pytest.mark.tf
def test_every_compile_matches_tensorflows_own_count(run: dict[str, Any]) -> None:
    tf_counts = _tf_counts(run["stderr"])
    recorded: dict[str, int] = {}
    for function in run["functions"].values():
        for cluster, n in _recorded(function).items():
            recorded[cluster] = recorded.get(cluster, 0) + n
        assert function["xla_compiles"] == len(function["xla_events"])
        assert function["xla_compile_seconds"] == pytest.approx(
            sum(e["seconds"] for e in function["xla_events"]), abs=1e-5)
    assert recorded == tf_counts
    # plain, open_batch, many, predict_on_batch, two fits, then the budget scenarios; the
    # decorated function compiles 2 or 3 times (its breach is raised on the call after the log).
    decorated = sum(n for cluster, n in tf_counts.items() if "_decorated_" in cluster)
    assert decorated in (2, 3)
    assert sum(tf_counts.values()) - decorated == 2 + 3 + 12 + 6 + 2 + 2 + 3 + 2
    assert run["internal_errors"] == 0


@pytest.mark.tf
def test_the_session_with_xla_events_follows_the_schema_and_loads_back(run: dict[str, Any]) -> None:
    from schema_helpers import schema_errors
    from tfretrace.records.session import Session

    assert schema_errors(run["session"]) == []
    loaded = Session.from_dict(run["session"])
    assert loaded.to_dict()["functions"] == run["session"]["functions"]
    summary = {row.name: row for row in loaded.summary()}
    assert (summary["open_batch"].xla_compiles, summary["many"].xla_compiles) == (3, 12)


@pytest.mark.tf
def test_fix_plan_buckets_the_varying_dimensions_or_turns_xla_off(run: dict[str, Any]) -> None:
    functions = {f["name"]: f for f in run["session"]["functions"]}
    bucket = [s for s in functions["open_batch"]["plan"] if s["kind"] == "xla-bucket"]
    # Batch sizes 2, 3, 4 -> buckets 2, 4: 3 compiles -> 2.
    assert [(s["compiles_before"], s["compiles_after"]) for s in bucket] == [(3, 2)]
    assert "x dim 0 (trace #1: seen 2, 3, 4 -> buckets 2, 4)" in bucket[0]["summary"]
    kinds = {s["kind"]: s for s in functions["many"]["plan"]}
    # 12 compiles for 12 calls: XLA off; sizes 1..12 -> buckets 2, 4, 8, 16 (4 at most).
    assert (kinds["xla-off"]["compiles_before"], kinds["xla-off"]["compiles_after"]) == (12, 0)
    # The function's own decorator with XLA off: its input_signature kept, so pasting it does not retrace.
    assert kinds["xla-off"]["code"] == (
        "@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)], jit_compile=False)"
    )
    assert (kinds["xla-bucket"]["compiles_before"], kinds["xla-bucket"]["compiles_after"]) == (12, 4)
    assert not [s for s in functions["plain"]["plan"] if s["kind"].startswith("xla-")]
    keras_off = [s for f in functions.values() if f["keras"] for s in f["plan"] if s["kind"] == "xla-off"]
    assert all(s["code"] == "model.compile(..., jit_compile=False)" for s in keras_off)


@pytest.mark.tf
def test_plain_jit_function_compiles_once_per_trace(run: dict[str, Any]) -> None:
    plain = run["functions"]["plain"]
    assert (plain["traces"], plain["xla_compiles"]) == (2, 2)
    assert [(e["trace"], e["cause"]) for e in plain["xla_events"]] == [
        (1, "xla-first-compile"), (2, "xla-first-compile")]


@pytest.mark.tf
def test_input_signature_with_none_compiles_per_concrete_shape(run: dict[str, Any]) -> None:
    f = run["functions"]["open_batch"]
    assert (f["traces"], f["xla_compiles"]) == (1, 3)
    assert [e["cause"] for e in f["xla_events"]] == ["xla-first-compile", "xla-recompile", "xla-recompile"]
    assert _changes(f) == [[], ["x: shape (2, 4) -> (3, 4), dim 0"], ["x: shape (3, 4) -> (4, 4), dim 0"]]
    assert [leaf["shape"] for e in f["xla_events"] for leaf in e["signature"]] == [[2, 4], [3, 4], [4, 4]]
    assert [e["closest"] for e in f["xla_events"]] == [None, 1, 2]


@pytest.mark.tf
def test_traced_once_compiled_twelve_times_is_megamorphic(run: dict[str, Any]) -> None:
    f = run["functions"]["many"]
    assert (f["traces"], f["xla_compiles"], f["calls"]) == (1, 12, 12)
    assert {e["trace"] for e in f["xla_events"]} == {1}
    assert [e["tf_count"] for e in f["xla_events"]] == list(range(1, 13))
    assert f["megamorphic"] == [f["xla_events"][0]["cluster"]]
    # Fewer than 11 compiles is not megamorphic.
    assert run["functions"]["open_batch"]["megamorphic"] == []


@pytest.mark.tf
def test_nothing_is_recorded_without_xla(run: dict[str, Any]) -> None:
    f = run["functions"]["no_xla"]
    assert (f["traces"], f["xla_compiles"], f["xla_events"], f["xla_compile_seconds"]) == (2, 0, [], 0.0)


@pytest.mark.tf
def test_keras_jit_predict_on_batch_and_ragged_fit(run: dict[str, Any]) -> None:
    predict = run["functions"]["sequential.predict_on_batch"]
    # Batch sizes 32, 16, 20, 24, 28, 16, 33: 2 traces, 6 compiles, no TensorFlow warning.
    # 2 traces of the predict function, each with Keras' jit-compiled step traced inside it
    # (folded into the row: docs/keras.md): 4 traces, 2 of them retraces' nested parts.
    assert (predict["traces"], predict["xla_compiles"]) == (4, 6)
    assert predict["retraces"] == 1
    assert _changes(predict)[2:] == [
        [f"data[0]: shape ({a}, 8) -> ({b}, 8), dim 0"] for a, b in ((16, 20), (20, 24), (24, 28), (28, 33))]
    # Two models fit (the second under the callback budget): each compiles its train step for
    # batches of 16, then again for the last batch of 2.
    # (two models built at different places: a row each, the step folded into the loop function)
    ragged = ["data[0]: shape (16, 8) -> (2, 8), dim 0", "data[1]: shape (16, 1) -> (2, 1), dim 0"]
    # Keras 2 (TF 2.15): the step's first trace creates the optimizer's slots, so it is traced
    # again without variable creation (an expected trace) and that third trace is the one compiled.
    step = 3 if run["keras2"] else 2
    for model in ("sequential", "sequential_1"):
        fit = run["functions"][f"{model}.fit"]
        assert fit["traces"] == step and fit["xla_compiles"] == 2
        if not run["keras2"]:
            # TensorFlow's own count (TF 2.15's is its cache's length, without the dropped
            # variable-creation trace, so only Keras 3's is comparable).
            assert fit["traces"] == run["tf_train_traces"][model]
        compiled = [(e["trace"], e["cause"]) for e in fit["xla_events"]]
        if fit["retraces"] == 0:
            # Keras up to 3.15 (and 2) trace the jit step inside the loop function, whose
            # iterator input hides the ragged batch: the nested step's one trace compiles twice,
            # the second time for the ragged shapes.
            assert compiled == [(step, "xla-first-compile"), (step, "xla-recompile")]
            assert _changes(fit) == [[], ragged]
        else:
            # Keras 3.16 calls the jit step itself per batch: the ragged batch retraces it (TF's
            # count above agrees) and each trace compiles once.
            assert compiled == [(1, "xla-first-compile"), (2, "xla-first-compile")]
            assert [e["cause"] for e in fit["events"]] == ["first-trace", "shape-changed"]
            assert [c["text"] for c in fit["events"][1]["changes"]] == ragged
    assert b"out of the last" not in run["stderr"]


@pytest.mark.tf
def test_xla_budgets_in_a_block_a_decorator_a_test_and_a_keras_callback(run: dict[str, Any]) -> None:
    budgets = run["budgets"]
    assert budgets["block"] == ["xla-recompile", 3]  # at the block's end, after the 3rd compile
    cause, count, call = budgets["decorator"]
    assert (cause, count) == ("xla-recompile", 2) and call in (2, 3)
    assert budgets["marker"] == ["xla-recompile", 2]
    summary = budgets["marker_summary"][0]
    assert "traces=1 causes=first-trace xla_compiles=2 compile_s=" in summary
    assert "refused" not in summary  # a compile over budget happened: nothing was refused
    # The callback stops at model2's second compile, a recompile or a retrace's first compile
    # depending on how this Keras calls its jit step (above).
    assert budgets["keras"][0] == run["functions"]["sequential_1.fit"]["xla_events"][1]["cause"]
    assert "2 XLA compiles > max_xla_compiles=1" in budgets["keras"][1]


@pytest.mark.tf
def test_stderr_passes_through_except_the_lines_tfretrace_asked_for(run: dict[str, Any]) -> None:
    sys.path.insert(0, str(HERE))
    try:
        from xla_scenarios_bytes import USER_BYTES
    finally:
        sys.path.remove(str(HERE))
    stderr = run["stderr"]
    assert stderr.count(b"".join(USER_BYTES)) == 2
    assert b"xla_compiler.cc" not in stderr  # asked for by tfretrace: all swallowed
    assert b"Compiled cluster using XLA!" in stderr  # TensorFlow's own line: untouched
    # Asked for by the user: untouched, one line per compile tfretrace recorded.
    assert len(_TF_COMPILED.findall(stderr)) == sum(f["xla_compiles"] for f in run["functions"].values())


# -- without TensorFlow ----------------------------------------------------------------------------

_LINES = [
    b"I0000 00:00:1.5 77 xla_compiler.cc:820] XlaCompiler::CompileFunction __inference_f_9[_XlaMustCompile=true]\n",
    b"I0000 00:00:1.5 77 xla_compiler.cc:1265] XLA computation inputs:\n",
    b"I0000 00:00:1.5 77 xla_compiler.cc:1268]   XLA arg 0 shape: f32[16,8] name:  TF arg 0 node name: \n",
    b"I0000 00:00:1.5 77 xla_compiler.cc:1268]   XLA arg 1 shape: f32[8,4] name: dense/kernel/0 TF arg 1 node name: \n",
    b"I0000 00:00:1.5 77 xla_compiler.cc:820] XlaCompiler::CompileFunction while_body_3[]\n",
    b"I0000 00:00:1.5 77 xla_compiler.cc:1265] XLA computation inputs:\n",
    b"I0000 00:00:1.5 77 xla_compiler.cc:1268]   XLA arg 0 shape: s32[] name:  TF arg 0 node name: \n",
    b"I0000 00:00:1.6 77 device_compilation_profiler.cc:113] Compiled __inference_f_9 3 times, "
    b"compile time: 90128 us, cumulative: 184591 us (0 us / 185 ms)\n",
]


def test_parser_reads_cluster_count_seconds_and_the_clusters_own_inputs() -> None:
    parser = xla_log.Parser(frozenset({"xla_compiler", "device_compilation_profiler"}))
    results = [parser.feed(line) for line in _LINES]
    assert all(ours for ours, _ in results)
    done = [d for _, d in results if d is not None]
    assert done == [xla_log.Compile("__inference_f_9", 3, 0.090128, (xla_log.XlaArg(0, "float32", (16, 8)),))]
    # A module the user asked for is parsed but not swallowed; other lines are not tfretrace's.
    user = xla_log.Parser(frozenset({"xla_compiler"}))
    assert user.feed(_LINES[-1])[0] is False
    assert user.feed(b"I0000 00:00:1.5 77 port.cc:153] oneDNN custom operations are on\n") == (False, None)


def test_tap_passes_everything_else_through_byte_for_byte(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    sys.path.insert(0, str(HERE))
    try:
        from xla_scenarios_bytes import USER_BYTES
    finally:
        sys.path.remove(str(HERE))
    seen: list[xla_log.Compile] = []
    errors: list[BaseException] = []
    parser = xla_log.Parser(frozenset({"xla_compiler", "device_compilation_profiler"}))
    tap = xla.Tap(parser, seen.append, errors.append)
    tap.start()
    try:
        for chunk in USER_BYTES[:3]:
            os.write(2, chunk)
        for line in _LINES:  # split mid-line: the tap must hold it until the newline
            os.write(2, line[:30])
            os.write(2, line[30:])
        for chunk in USER_BYTES[3:]:
            os.write(2, chunk)
        tap.sync()
    finally:
        tap.stop()
    assert capfdbinary.readouterr().err == b"".join(USER_BYTES)
    assert [c.cluster for c in seen] == ["__inference_f_9"]
    assert errors == []


def test_request_keeps_the_users_modules_and_says_when_tf_was_first() -> None:
    env = {"TF_CPP_VMODULE": "xla_compiler=3,foo=1"}
    assert xla.request(env) == frozenset({"device_compilation_profiler"})
    assert env["TF_CPP_VMODULE"] == "xla_compiler=3,foo=1,device_compilation_profiler=1"
    assert xla.requested(env)
    xla.restore("foo=1", env)
    assert env["TF_CPP_VMODULE"] == "foo=1" and not xla.requested(env)
    assert xla.silenced({"TF_CPP_MIN_LOG_LEVEL": "2"}) is not None
    assert xla.silenced({"TF_CPP_MIN_LOG_LEVEL": "0"}) is None
    assert "TF_CPP_VMODULE=device_compilation_profiler=1,xla_compiler=2" in xla.how_to_enable()


def test_reports_show_compiles_beside_traces_and_rank_by_compile_seconds() -> None:
    from tfretrace.records.events import Change, Leaf
    from tfretrace.records.function_report import FunctionReport
    from tfretrace.records.session import Session
    from tfretrace.records.xla_events import XlaEvent
    from tfretrace.render.html import HtmlRenderer
    from tfretrace.render.text import TextRenderer

    def leaf(n: int) -> tuple[Leaf, ...]:
        return (Leaf("x", "tensor", dtype="float32", shape=(n, 8)),)

    events = [XlaEvent(1, 1, "xla-first-compile", 0.2, leaf(16), cluster="__inference_step_9", tf_count=1)]
    for i, (a, b) in enumerate(((16, 20), (20, 24)), start=2):
        change = Change("x", "shape", f"({a}, 8)", f"({b}, 8)", "dim 0")
        events.append(XlaEvent(i, 1, "xla-recompile", 0.15, leaf(b), (change,), i - 1, "__inference_step_9", i))
    compiled = FunctionReport("step", "train.py:3", calls=7, traces=1, trace_seconds=0.01, objects=1,
                              events=(), xla_compiles=3, xla_compile_seconds=0.5, xla_events=tuple(events))
    traced = FunctionReport("other", "train.py:9", calls=3, traces=1, trace_seconds=0.3, objects=1, events=())
    session = Session(functions=(traced, compiled), wall_seconds=2.0)
    assert [row.name for row in session.summary()] == ["step", "other"]  # 0.51 s beats 0.3 s
    text = TextRenderer(width=140, verbose=True).render(session)
    assert "3 XLA compiles (2 recompiles), 500.0 ms compiling" in text.splitlines()[0]
    assert re.search(r"XLA compiles +compile s", text)
    assert "XLA #3 xla-recompile  150.0 ms  (trace #1, compared with XLA #2)" in text
    assert "x: shape (20, 8) -> (24, 8), dim 0" in text
    assert "Why (xla-recompile, TFR015)" in text
    html = HtmlRenderer().render(session)
    assert "XLA compiles</button>" in html and "XLA compiles 3 (2 recompiles)" in html
    # Without XLA the tables keep their columns.
    plain = Session(functions=(traced,), wall_seconds=2.0)
    assert "XLA compiles" not in TextRenderer(width=140, verbose=True).render(plain)


_INNER_TEST = '''
import sys
import pytest
import tensorflow as tf

@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.float32)])
def step(x):
    return x * 2.0

@pytest.mark.max_traces(None, "step", max_xla_compiles=2)
def test_over():
    print("user stderr line", file=sys.stderr)
    for n in (1, 2, 3):
        step(tf.ones([n]))

@pytest.mark.max_traces(None, "step", max_xla_compiles=5)
def test_under():
    for n in (4, 5):
        step(tf.ones([n]))
'''


@pytest.mark.tf
@pytest.mark.parametrize("flag", ["--tfretrace-xla", None])
def test_pytest_marker_limits_xla_compiles_or_says_how_to_enable(tmp_path: Path, flag: str | None) -> None:
    (tmp_path / "test_inner.py").write_text(_INNER_TEST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_VMODULE", "TF_CPP_MIN_LOG_LEVEL")}
    # The inner pytest runs elsewhere: this checkout's tfretrace first, by absolute path.
    source = str(Path(xla.__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [env.get("PYTHONPATH")])])
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_inner.py"]
    done = subprocess.run([*args, *([flag] if flag else [])], cwd=tmp_path, env=env, capture_output=True,
                          timeout=300, check=False)
    out = done.stdout.decode(errors="replace")
    if flag:
        assert "1 failed, 1 passed" in out, out[-3000:]
        assert "was XLA-compiled 3 times, cause xla-recompile" in out
        assert "x: shape (2,) -> (3,), dim 0" in out
        # The test's captured stderr has the program's line and TensorFlow's usual lines, not the
        # compile lines tfretrace asked for.
        captured = out.split("Captured stderr call")[1].split("=====")[0]
        assert "user stderr line" in captured.splitlines()
        assert "xla_compiler.cc" not in captured and "device_compilation_profiler.cc" not in captured
    else:
        assert "2 errors" in out, out[-3000:]
        assert "TensorFlow was imported before tfretrace could ask it to log them" in out
        assert "pytest --tfretrace-xla" in out


@pytest.mark.tf
def test_stderr_is_only_tapped_once_a_function_compiles_with_xla(tmp_path: Path) -> None:
    """A monitored program that never uses XLA keeps its own fd 2: no pipe, nothing a crash could lose."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import os, stat\nimport tensorflow as tf\n\n"
        "def piped():\n    return stat.S_ISFIFO(os.fstat(2).st_mode)\n\n"
        "@tf.function\ndef f(x):\n    return x + 1\n\n"
        "f(tf.constant(1.0))\nprint('plain', piped())\n\n"
        "@tf.function(jit_compile=True)\ndef g(x):\n    return x * 2\n\n"
        "g(tf.constant(1.0))\nprint('xla', piped())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_CPP_VMODULE")}
    with (tmp_path / "err.txt").open("wb") as err:  # a regular file: a pipe here would be our own
        done = subprocess.run([sys.executable, "-m", "tfretrace", "run", str(script)], stdout=subprocess.PIPE,
                              stderr=err, env=env, timeout=300, check=False)
    assert done.returncode == 0, (tmp_path / "err.txt").read_text(errors="replace")[-2000:]
    assert done.stdout.decode().split() == ["plain", "False", "xla", "True"]


# -- the fd-2 tap: the program sees the stderr it has without tfretrace ----------------------------

_JIT = (
    "import os, sys\nimport tensorflow as tf\n\n"
    "@tf.function(jit_compile=True)\ndef g(x):\n    return x * 2\n\n"
    "g(tf.constant(1.0))\n"
)


def _run_under_tfretrace(script: Path, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_CPP_VMODULE")}
    return subprocess.run([sys.executable, "-m", "tfretrace", "run", str(script)], env=env, timeout=300,
                          check=False, **kwargs)


@pytest.mark.tf
def test_a_crash_after_an_xla_compile_keeps_the_last_stderr_lines_and_the_fault_traceback(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(
        _JIT + "import ctypes, faulthandler\nfaulthandler.enable()\n"
        "sys.stderr.write('last words before the crash\\n')\nsys.stderr.flush()\n"
        "ctypes.string_at(0)\n"
    )
    done = _run_under_tfretrace(script, capture_output=True)
    assert done.returncode == -11, done.stderr[-2000:]
    assert b"last words before the crash" in done.stderr
    assert b"Fatal Python error: Segmentation fault" in done.stderr
    assert b"crash.py" in done.stderr.split(b"Fatal Python error")[1]  # faulthandler's traceback


@pytest.mark.tf
def test_a_helper_process_outliving_the_program_still_writes_to_stderr(tmp_path: Path) -> None:
    script = tmp_path / "spawns.py"
    status = tmp_path / "helper-status.txt"
    helper = (
        "import signal, sys, time\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\ntime.sleep(3.0)\n"
        "sys.stderr.write('helper outlived the program\\n')\nsys.stderr.flush()\n"
        f"open({str(status)!r}, 'w').write('wrote')\n"
    )
    script.write_text(_JIT + f"import subprocess\nsubprocess.Popen([sys.executable, '-c', {helper!r}])\n")
    done = _run_under_tfretrace(script, capture_output=True)
    assert done.returncode == 0, done.stderr[-2000:]
    # The capture ends when the last holder of the program's stderr is gone: the helper too.
    assert b"helper outlived the program" in done.stderr
    assert status.read_text() == "wrote"


@pytest.mark.tf
@pytest.mark.parametrize("level", [None, "2"])
def test_a_terminal_stderr_stays_a_terminal_of_the_same_size(tmp_path: Path, level: str | None) -> None:
    import fcntl
    import pty
    import struct
    import termios

    script = tmp_path / "tty.py"
    script.write_text(
        _JIT + "size = os.get_terminal_size(2)\n"
        # No process the program did not start is its child (os.wait() would wait for it).
        "try:\n    os.waitpid(-1, os.WNOHANG)\n    kids = 'some'\nexcept ChildProcessError:\n    kids = 'none'\n"
        "print('seen', os.isatty(2), sys.stderr.isatty(), size.columns, size.lines, kids, flush=True)\n"
    )
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 37, 123, 0, 0))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tfretrace", "run", str(script)], stdin=slave, stdout=slave, stderr=slave,
            # TF_CPP_MIN_LOG_LEVEL=2: run reads fd 2 from the start (to count compiles the level hides).
            env={k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_CPP_VMODULE")}
            | ({} if level is None else {"TF_CPP_MIN_LOG_LEVEL": level}),
        )
        os.close(slave)
        output = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal is gone
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(timeout=300) == 0, output[-2000:]
    finally:
        os.close(master)
    # The live status line erases itself before each line the program writes (\r, erase-line).
    lines = [line.replace(b"\x1b[K", b"").lstrip(b"\r") for line in output.splitlines()]
    seen = [line for line in lines if line.startswith(b"seen ")]
    assert seen == [b"seen True True 123 37 none"], output[-2000:]


_QUIETED_PROGRAM = '''
import sys
import tensorflow as tf

@tf.function(jit_compile=True, reduce_retracing=True)
def step(x):
    return x * 2.0

for n in (2, 3, 4, 5, 6):
    step(tf.ones([n]))
print("program stderr line", file=sys.stderr)
'''
_LOG_SOURCE = re.compile(rb"^([IWEF])\d{4} [\d:.]+\s+\d+ ([\w.]+):\d+\]", re.M)


def _tf_log_kinds(stderr: bytes) -> set[tuple[bytes, bytes]]:
    """(severity, source file) of each TensorFlow C++ log line."""
    return set(_LOG_SOURCE.findall(stderr))


@pytest.mark.tf
def test_a_quieted_tensorflow_still_has_its_compiles_counted_and_stays_quiet(tmp_path: Path) -> None:
    script = tmp_path / "quiet.py"
    script.write_text(_QUIETED_PROGRAM, encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_CPP_VMODULE")}
    # TensorFlow's own count: the same program, its compile log asked for and shown.
    own = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=300, check=False,
                         env=dict(base, TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="device_compilation_profiler=1"))
    tf_compiles = sum(_tf_counts(own.stderr).values())
    assert tf_compiles >= 2, own.stderr[-2000:]
    # What the user's level lets through, without tfretrace.
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=300, check=False,
                           env=dict(base, TF_CPP_MIN_LOG_LEVEL="2"))
    saved = tmp_path / "s.json"
    done = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--save", str(saved), str(script)],
                          capture_output=True, timeout=300, check=False, env=dict(base, TF_CPP_MIN_LOG_LEVEL="2"))
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    session = json.loads(saved.read_text())
    assert sum(f["xla_compiles"] for f in session["functions"]) == tf_compiles
    assert not [n for n in session["notes"] if "XLA compiles not observed" in n]
    program_err = done.stderr.split(b"tfretrace: 1 function")[0]
    assert b"program stderr line" in program_err
    # Nothing the user's level hides: every TensorFlow log line shown is of a kind the plain run shows.
    assert _tf_log_kinds(program_err) <= _tf_log_kinds(plain.stderr), program_err.decode(errors="replace")
    assert b"To enable the following instructions" not in program_err  # a hidden line's second line


_LATE_BUDGET = '''
import tensorflow as tf
import tfretrace

@tfretrace.budget(max_traces=None, max_xla_compiles=1)
@tf.function(jit_compile=True, reduce_retracing=True)
def step(x):
    return x * 2.0

for n in (2, 3, 4):
    step(tf.ones([n]))
print("no budget error")
'''


@pytest.mark.tf
def test_a_compile_budget_after_tensorflow_was_imported_says_why_it_cannot_count(tmp_path: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text(_LATE_BUDGET, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_VMODULE", "TF_CPP_MIN_LOG_LEVEL")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=300, check=False, env=env)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 1 and "no budget error" not in done.stdout.decode()
    last = err.strip().splitlines()[-1]
    assert "max_xla_compiles" in last and "TensorFlow was imported before tfretrace" in last, err[-2000:]
    assert 'late.py", line 5' in err  # raised at the decorator, in the user's file


def test_hidden_lines_take_only_a_known_message_s_further_lines_along() -> None:
    parser = xla_log.Parser(frozenset(), hide_below=2)
    parser.new_chunk()
    guard = b"I0000 00:00:1.5   7 cpu_feature_guard.cc:227] This TensorFlow binary is optimized\n"
    assert parser.feed(guard)[0] and parser.feed(b"To enable the following instructions: AVX2\n")[0]
    other = b"I0000 00:00:1.5   7 service.cc:153] XLA service initialized\n"
    assert parser.feed(other)[0]
    assert not parser.feed(b"the program's own stderr line\n")[0]  # same read, right after: kept
    assert not parser.feed(b"E0000 00:00:1.5   7 service.cc:9] an error the level shows\n")[0]


def test_a_hidden_op_error_takes_its_node_line_along() -> None:
    # An op's error (hidden at TF_CPP_MIN_LOG_LEVEL=3) names its node on a line of its own: shown,
    # the user saw "\t [[{{node embedding_1/GatherV2}}]]" lines python never printed.
    parser = xla_log.Parser(frozenset(), hide_below=3)
    parser.new_chunk()
    failed = b"W0000 00:00:1.5   7 op_kernel.cc:1857] OP_REQUIRES failed at gather_op.cc:89 : INVALID_ARGUMENT\n"
    node = b"\t [[{{node embedding_1/GatherV2}}]]\n"
    assert parser.feed(failed)[0] and parser.feed(node)[0]
    assert not parser.feed(b"the program's own stderr line\n")[0]
    parser.new_chunk()
    assert not parser.feed(node)[0]  # a read of its own, after no hidden line: the user's text
