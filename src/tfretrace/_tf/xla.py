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
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The log level's reading and lowering live in loglevel; xla.<name> keeps working for callers.
from tfretrace._tf.loglevel import MIN_LEVEL_ENV, lower_level, restore_level, silenced, user_level
from tfretrace._tf.xla_log import Compile, Parser, XlaArg

__all__ = ["MIN_LEVEL_ENV", "lower_level", "restore_level", "silenced", "user_level"]

# Module -> verbose level tfretrace needs. Nothing here logs on a cached call.
MODULES: dict[str, int] = {"device_compilation_profiler": 1, "xla_compiler": 2}
ENV = "TF_CPP_VMODULE"


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


class Tap:
    """fd 2 through a relay process: TensorFlow's compile lines are parsed, every other byte passed on.

    A line is held back only while it could still be one of tfretrace's (it starts like a
    TensorFlow log line); anything else, partial lines and progress bars included, is written
    through as soon as it is read, so the user's stderr is unchanged apart from those lines.
    The relay (:mod:`tfretrace._tf.relay`) is a process of its own: it reads until the last
    writer is gone, so a crash of the program loses nothing and a process the program started
    can still write after it. A terminal stays a terminal: fd 2 becomes a pseudo-terminal with
    the real one's size and settings (output passed unchanged).

    When fd 1 is the same file as fd 2 (``> log 2>&1``, one terminal), fd 1 goes into the same
    pipe: the program's two streams reach their one destination in the order it wrote them.
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
        self._stdout = -1  # fd 1 before it joined the pipe (-1: it kept its own file)
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
        if not terminal and _same_file(1, 2):
            # Two pipes (or fd 2 through the relay, fd 1 not) would reorder what the program
            # writes to one file (`> log 2>&1`); one pipe keeps its order, and the relay writes to
            # that file. A terminal keeps fd 1 as it is: the live status line is drawn between the
            # program's own lines there, and needs them to reach the terminal directly.
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stdout.flush()
            with contextlib.suppress(OSError):
                self._stdout = os.dup(1)
                os.dup2(sink, 1)
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
        if self._stdout >= 0:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stdout.flush()
            with contextlib.suppress(OSError):
                if os.path.sameopenfile(1, self._pipe_write):  # not if the program put another file there
                    os.dup2(self._stdout, 1)
            os.close(self._stdout)
            self._stdout = -1
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


def _same_file(a: int, b: int) -> bool:
    """Whether two descriptors lead to one file, pipe or terminal (not merely the same kind)."""
    try:
        return os.path.samestat(os.fstat(a), os.fstat(b))
    except OSError:
        return False


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


def cluster_of(concrete: Any, tracing_options: Any) -> str | None:
    """The XLA cluster name of a trace made with jit_compile=True, else None."""
    attrs = getattr(tracing_options, "attributes", None) or {}
    if not attrs.get("_XlaMustCompile"):
        return None
    name = getattr(concrete, "name", None)
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if isinstance(name, str) else None
