"""XLA compiles: asking TensorFlow to log them, reading its log from fd 2, passing the rest through.

TensorFlow keeps no Python-readable record of its XLA compiles (the ``/tensorflow/core/
xla_compilations`` counter is C++ only in 2.21). Its C++ log says everything, but only at verbose
levels chosen by ``TF_CPP_VMODULE`` when the library loads:

* ``device_compilation_profiler=1`` logs once per compile, never on a cached call:
  ``Compiled __inference_f_27 2 times, compile time: 90128 us, cumulative: ...`` -- the cluster
  (the concrete function's ``function_def.signature.name``), TensorFlow's own per-cluster count
  and the compile time;
* ``xla_compiler=2`` logs, also per compile only, ``XlaCompiler::CompileFunction <cluster>[...]``
  and then ``XLA arg i shape: f32[16,8] name: <variable or empty> TF arg j``: the concrete shapes.

Per-call logging (``device_compiler=2``, ``xla_ops=1``) is avoided: a cached call then costs what
it costs without tfretrace. The lines come out of the C++ library on fd 2, so a :class:`Tap`
swaps fd 2 for a pipe, hands the lines tfretrace asked for to a parser and writes every other byte
unchanged, in order, to the original stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The log level's reading and lowering live in loglevel; xla.<name> keeps working for callers.
from tfretrace._tf.loglevel import MIN_LEVEL_ENV, lower_level, restore_level, silenced, user_level

__all__ = ["MIN_LEVEL_ENV", "lower_level", "restore_level", "silenced", "user_level"]

# Module -> verbose level tfretrace needs. Nothing here logs on a cached call.
MODULES: dict[str, int] = {"device_compilation_profiler": 1, "xla_compiler": 2}
ENV = "TF_CPP_VMODULE"
_LOG_LINE = re.compile(rb"^([IWEF])\d{4} [\d:.]+\s+(\d+) ([\w.]+):\d+\] (.*)$")
# TensorFlow 2.15 logs through its own C++ logger: a date, the level, the source path, no thread.
_OLD_LOG_LINE = re.compile(rb"^\d{4}-\d\d-\d\d [\d:.]+: ([IWEF]) (?:\S*/)?([\w.]+):\d+\] (.*)$")
_COMPILE_FN = re.compile(r"^XlaCompiler::CompileFunction (\S+?)\[")
_ARG = re.compile(r"^\s*XLA arg (\d+) shape: (\w+)\[([\d,]*)\] name: (\S*) TF arg (\d+)")
_COMPILED = re.compile(r"^Compiled (\S+) (\d+) times, compile time: (\d+) us")
_XLA_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "s8": "int8",
    "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8", "u16": "uint16",
    "u32": "uint32", "u64": "uint64", "pred": "bool", "c64": "complex64", "c128": "complex128",
}


@dataclass(frozen=True)
class XlaArg:
    """One non-variable argument of a compile: its position among the function's inputs."""

    tf_arg: int
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Compile:
    """One XLA compile as TensorFlow logged it."""

    cluster: str
    tf_count: int
    seconds: float
    args: tuple[XlaArg, ...]


def requested(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether TF_CPP_VMODULE asks for every module at the level tfretrace needs."""
    levels = _parse_vmodule(env.get(ENV, ""))
    return all(levels.get(m, 0) >= level for m, level in MODULES.items())




def request(env: dict[str, str] | os._Environ[str] = os.environ) -> frozenset[str]:
    """Add tfretrace's modules to TF_CPP_VMODULE (keeping the user's); return the ones it added.

    Only effective before TensorFlow's library loads: it reads the variable once, while it is
    imported, so :func:`restore` can put the user's value back right after the import (child
    processes then see the user's environment, not tfretrace's).
    """
    levels = _parse_vmodule(env.get(ENV, ""))
    added = tuple(m for m, level in MODULES.items() if levels.get(m, 0) < level)
    if added:
        parts = [p for p in env.get(ENV, "").split(",") if p.strip() and p.split("=")[0].strip() not in added]
        parts += [f"{m}={MODULES[m]}" for m in added]
        env[ENV] = ",".join(parts)
    return frozenset(added)


def restore(original: str | None, env: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Put the user's TF_CPP_VMODULE back (None: it was not set)."""
    if original is None:
        env.pop(ENV, None)
    else:
        env[ENV] = original


# TensorFlow's C++ severities in the order TF_CPP_MIN_LOG_LEVEL counts them.
_SEVERITIES = b"IWEF"
# Sources whose INFO message spans lines (the CPU instructions note at import: "To enable ...").
_MULTILINE = frozenset({"cpu_feature_guard"})


def tensorflow_loaded() -> bool:
    """Whether TensorFlow's library is already loaded (then TF_CPP_VMODULE is read already)."""
    return "tensorflow" in sys.modules


def how_to_enable() -> str:
    """The one sentence a user needs when TensorFlow was imported before tfretrace could ask."""
    wanted = ",".join(f"{m}={v}" for m, v in MODULES.items())
    return (
        "XLA compiles not observed: TensorFlow was imported before tfretrace could ask it to log "
        f"them; start monitoring before importing TensorFlow, run under `tfretrace run`, or set "
        f"{ENV}={wanted} in the environment"
    )


def _parse_vmodule(text: str) -> dict[str, int]:
    levels: dict[str, int] = {}
    for part in text.split(","):
        name, _, level = part.partition("=")
        try:
            levels[name.strip()] = int(level)
        except ValueError:
            continue
    return levels


@dataclass
class _Building:
    cluster: str
    args: list[XlaArg] = field(default_factory=list)
    inputs_seen: bool = False
    collecting: bool = False


class Parser:
    """Turns TensorFlow log lines into :class:`Compile` records; says which lines were its own.

    Inside one compile, tf2xla compiles while-loop bodies and branches with CompileFunction too;
    the cluster's own argument list is the first ``XLA computation inputs`` block after its
    CompileFunction line, so later blocks (the bodies') are ignored.
    """

    def __init__(self, swallow: frozenset[str], hide_below: int = 0) -> None:
        # Source files whose lines exist only because tfretrace asked for them.
        self._swallow = swallow
        self._building: dict[bytes, list[_Building]] = {}
        # Lines of a severity below the user's TF_CPP_MIN_LOG_LEVEL, which tfretrace lowered:
        # hidden again (a known multi-line message with its further lines in the same read).
        self._hide_below = hide_below
        self._hiding = False

    def new_chunk(self) -> None:
        """A new read from the pipe: a message's further lines arrive in the same write."""
        self._hiding = False

    def feed(self, line: bytes) -> tuple[bool, Compile | None]:
        """(line is tfretrace's own, the compile it completes if any)."""
        text = line.rstrip(b"\r\n")
        match = _LOG_LINE.match(text)
        if match is not None:
            severity, thread, source, body_bytes = match.groups()
        else:
            old = _OLD_LOG_LINE.match(text)
            if old is None:
                return self._hiding, None  # a hidden message's further line, or the user's
            # No thread id in this format: compiles on several threads at once could interleave
            # their argument lines, which only makes the per-argument diff of those compiles vaguer.
            thread = b""
            severity, source, body_bytes = old.groups()
        module = source.decode("ascii", "replace").rsplit(".", 1)[0]
        body = body_bytes.decode("utf-8", "replace")
        hidden = _SEVERITIES.index(severity) < self._hide_below
        # A message's further lines have no prefix; in a pipe they cannot be told from the user's
        # next line, so only TensorFlow's known multi-line INFO message takes them along.
        self._hiding = hidden and module in _MULTILINE
        ours = hidden or module in self._swallow or (
            module == "dump_graph" and "xla_compile_" in body and "xla_compiler" in self._swallow
        )
        if module == "xla_compiler":
            self._on_compiler(thread, body)
        elif module == "device_compilation_profiler":
            return ours, self._on_compiled(thread, body)
        return ours, None

    def _on_compiler(self, thread: bytes, body: str) -> None:
        stack = self._building.setdefault(thread, [])
        started = _COMPILE_FN.match(body)
        if started is not None:
            stack.append(_Building(started.group(1)))
            del stack[:-16]  # a compile that failed never logs "Compiled": do not grow forever
            return
        if not stack:
            return
        if body.startswith("XLA computation inputs"):
            first = next((b for b in stack if not b.inputs_seen), None)
            for building in stack:
                building.collecting = building is first
            if first is not None:
                first.inputs_seen = True
            return
        arg = _ARG.match(body)
        if arg is None:
            if not body.lstrip().startswith("XLA arg"):
                for building in stack:
                    building.collecting = False
            return
        for building in stack:
            if building.collecting and not arg.group(4):  # named args are variables
                dims = tuple(int(d) for d in arg.group(3).split(",") if d)
                dtype = _XLA_DTYPES.get(arg.group(2), arg.group(2))
                building.args.append(XlaArg(int(arg.group(5)), dtype, dims))

    def _on_compiled(self, thread: bytes, body: str) -> Compile | None:
        done = _COMPILED.match(body)
        if done is None:
            return None
        cluster = done.group(1)
        stack = self._building.get(thread, [])
        args: tuple[XlaArg, ...] = ()
        for at in range(len(stack) - 1, -1, -1):
            if stack[at].cluster == cluster:
                args = tuple(stack[at].args)
                del stack[at:]
                break
        return Compile(cluster, int(done.group(2)), int(done.group(3)) / 1e6, args)


class Tap:
    """fd 2 through a relay process: TensorFlow's compile lines are parsed, every other byte passed on.

    A line is held back only while it could still be one of tfretrace's (it starts like a
    TensorFlow log line); anything else, partial lines and progress bars included, is written
    through as soon as it is read, so the user's stderr is unchanged apart from those lines.
    The relay (:mod:`tfretrace._tf.relay`) is a process of its own: it reads until the last
    writer is gone, so a crash of the program loses nothing and a process the program started
    can still write after it. A terminal stays a terminal: fd 2 becomes a pseudo-terminal with
    the real one's size and settings (output passed unchanged).
    """

    def __init__(self, parser: Parser, on_compile: Callable[[Compile], None],
                 on_error: Callable[[BaseException], None]) -> None:
        self._parser = parser
        self._on_compile = on_compile
        self._on_error = on_error
        self._marker = f"\x00tfretrace-sync-{os.getpid()}-{id(self)}\x00".encode()
        self._synced = threading.Condition()
        self._sync_sent = 0
        self._sync_seen = 0
        self._thread: threading.Thread | None = None
        self._original = -1
        self._pipe_write = -1
        self._back = -1

    @property
    def active(self) -> bool:
        """Whether fd 2 is (still) this tap's pipe."""
        if self._thread is None:
            return False
        try:
            return os.path.sameopenfile(2, self._pipe_write)
        except OSError:
            return False

    def start(self) -> None:
        """Start the relay, then swap fd 2 for its pipe (or pseudo-terminal)."""
        sys.stderr.flush()
        original = os.dup(2)  # no fd 2: OSError before anything is started
        terminal = os.isatty(2) and hasattr(os, "openpty")
        try:
            source, sink = os.openpty() if terminal else os.pipe()
        except OSError:
            os.close(original)
            raise
        back_read = back_write = -1
        try:
            back_read, back_write = os.pipe()
            if terminal:
                _mirror_terminal(2, sink)
            # The relay inherits today's fd 2 (the original stderr) as its own and writes there.
            relay = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, str(Path(__file__).resolve().parents[1])],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, pass_fds=(source, back_write),
            )
            assert relay.stdin is not None
            with relay.stdin:
                relay.stdin.write(pickle.dumps((self._parser, self._marker, source, back_write, terminal)))
            # It forks the relay and ends: reaped here, so the program has no child it did not start.
            if relay.wait(timeout=30) != 0:
                raise OSError(f"it exited with status {relay.returncode}")
        except (OSError, ValueError, pickle.PickleError, subprocess.TimeoutExpired) as exc:
            for fd in (source, sink, back_read, back_write, original):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            raise OSError(f"cannot start the stderr relay: {exc}") from None
        os.close(source)
        os.close(back_write)
        self._pipe_write, self._back, self._original = sink, back_read, original
        os.dup2(sink, 2)
        self._thread = threading.Thread(target=self._listen, name="tfretrace-xla-log", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Wait for what was written so far, put the original fd 2 back.

        The relay goes on until the last process holding the pipe (a child of the program)
        has closed it; it is not waited for.
        """
        if self._thread is None:
            return
        self.sync()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        if self.active:
            os.dup2(self._original, 2)
        os.close(self._pipe_write)  # the relay sees end of file once no one else holds it
        os.close(self._original)
        self._thread = None

    def sync(self, timeout: float = 2.0) -> None:
        """Wait until every line written to fd 2 so far has been read."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        with self._synced:
            self._sync_sent += 1
            wanted = self._sync_sent
        try:
            os.write(self._pipe_write, self._marker + b"\n")
        except OSError:
            return
        with self._synced:
            self._synced.wait_for(lambda: self._sync_seen >= wanted, timeout)

    def _listen(self) -> None:
        """Read the relay's messages until it ends (``S``, ``C {json}``, ``E "text"``, one a line)."""
        buffer = b""
        while True:
            try:
                chunk = os.read(self._back, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                self._message(line)
        os.close(self._back)
        with self._synced:  # no answer will come now: nobody waits for one
            self._sync_seen = self._sync_sent
            self._synced.notify_all()

    def _message(self, line: bytes) -> None:
        kind, _, body = line.partition(b" ")
        try:
            if kind == b"S":
                with self._synced:
                    self._sync_seen += 1
                    self._synced.notify_all()
            elif kind == b"C":
                data = json.loads(body)
                args = tuple(XlaArg(int(a), str(d), tuple(int(n) for n in shape)) for a, d, shape in data["args"])
                self._on_compile(Compile(str(data["cluster"]), int(data["tf_count"]), float(data["seconds"]), args))
            elif kind == b"E":
                self._on_error(RuntimeError(str(json.loads(body))))
        except Exception as exc:  # a monitor's error must not end the reading
            self._on_error(exc)


# The relay's start: only its own two modules of tfretrace are loaded (the package's __init__,
# which imports the monitor, is not run): the folder is named as a package path directly.
_BOOT = (
    "import sys, types\n"
    "for name, sub in (('tfretrace', ''), ('tfretrace._tf', '/_tf')):\n"
    "    module = types.ModuleType(name)\n"
    "    module.__path__ = [sys.argv[1] + sub]\n"
    "    sys.modules[name] = module\n"
    "from tfretrace._tf.relay import main\n"
    "main()\n"
)


def _mirror_terminal(terminal: int, pseudo: int) -> None:
    """The pseudo-terminal gets the terminal's settings and size; output is passed unchanged."""
    import fcntl
    import termios

    try:
        attrs = termios.tcgetattr(terminal)
        attrs[1] &= ~termios.OPOST  # no newline translation: the real terminal does its own
        termios.tcsetattr(pseudo, termios.TCSANOW, attrs)
        fcntl.ioctl(pseudo, termios.TIOCSWINSZ, fcntl.ioctl(terminal, termios.TIOCGWINSZ, b"\0" * 8))
    except (OSError, termios.error):
        pass  # still a terminal, of a default size


_PREFIX_DONE = re.compile(rb"^(?:[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+|\d{4}-\d\d-\d\d [\d:.]+: [IWEF] \S+):\d+\]")
_PREFIX_PART = re.compile(
    rb"^(?:[IWEF]\d{0,4}(?: [\d:.]*(?:\s+\d*(?: [\w.]*(?::\d*)?)?)?)?"
    rb"|\d{1,4}(?:-\d{0,2}(?:-\d{0,2}(?: [\d:.]*(?: (?:[IWEF](?: [\w/.]*(?::\d*)?)?)?)?)?)?)?)$"
)


def may_hold(partial: bytes, marker: bytes) -> bool:
    """A partial line that could still become a TensorFlow log line or the sync marker."""
    if len(partial) <= len(marker) and marker.startswith(partial):
        return True
    return bool(_PREFIX_DONE.match(partial) or _PREFIX_PART.match(partial))


def cluster_of(concrete: Any, tracing_options: Any) -> str | None:
    """The XLA cluster name of a trace made with jit_compile=True, else None."""
    attrs = getattr(tracing_options, "attributes", None) or {}
    if not attrs.get("_XlaMustCompile"):
        return None
    name = getattr(concrete, "name", None)
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if isinstance(name, str) else None
