"""The fd-2 relay process: reads what the program writes to stderr, passes it on, reports compiles.

It runs apart from the program (started by :class:`tfretrace._tf.xla.Tap`), so that nothing the
program writes is lost when the program dies (a segfault and faulthandler's traceback), and so
that a process the program started, which shares its stderr, can write after the program is
gone: the relay reads until the last writer closes. Lines TensorFlow logs for tfretrace are
parsed here and sent to the program's tap as one message a line on a pipe of their own:
``S`` (a sync marker was reached), ``C {json}`` (a compile), ``E "text"`` (a line it could not read).

Started with ``python -I -S`` and only the standard library: nothing of the user's runs here.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

from tfretrace._tf.xla_log import Compile, Parser, may_hold

# `tfretrace run` starts this process (python -I -S) and waits for it to fork the relay: it
# loads only what relaying needs (json: see _json).


def main() -> None:
    """Read the settings from stdin, then relay until every writer of the program's stderr is gone."""
    # Ctrl-C, Ctrl-\ and Ctrl-Z on the terminal are for the program, and so is a SIGTERM to the
    # whole job (`kill %1`, a CI cancel): the relay must outlive the program, whose handler or
    # finally block may still write, and drains until the last writer is gone.
    for name in ("SIGINT", "SIGQUIT", "SIGTSTP", "SIGHUP", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    parser, marker, source, back, terminal = pickle.load(sys.stdin.buffer)
    # Not the program's child: the process it started ends now (the tap waits for it), the
    # relay goes on in a fork. A program that waits for all its children (os.wait() until
    # ChildProcessError) must not find, or wait for, one it did not start.
    if os.fork() != 0:
        os._exit(0)
    if terminal:
        # The terminal was resized: the program's stderr (our pseudo-terminal) follows it.
        signal.signal(signal.SIGWINCH, lambda *_: copy_size(2, source))
    Relay(parser, marker, source, back).run()


def copy_size(terminal: int, to: int) -> None:
    """Give ``to`` the window size of ``terminal``."""
    import contextlib
    import fcntl
    import termios

    with contextlib.suppress(OSError):
        fcntl.ioctl(to, termios.TIOCSWINSZ, fcntl.ioctl(terminal, termios.TIOCGWINSZ, b"\0" * 8))


class Relay:
    """fd ``source`` to fd 2, byte for byte, but for the log lines the parser calls its own."""

    def __init__(self, parser: Parser, marker: bytes, source: int, back: int) -> None:
        self._parser = parser
        self._marker = marker
        self._source = source
        self._back = back

    def run(self) -> None:
        """Relay until end of file (every write end closed; EIO for a pseudo-terminal)."""
        pending = b""  # a line that may be tfretrace's, held until its newline
        passing = False  # inside a line already being passed through
        while True:
            try:
                chunk = os.read(self._source, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            data = pending + chunk
            pending = b""
            self._parser.new_chunk()  # a continuation line is taken along only within one read
            out = bytearray()
            while data:
                newline = data.find(b"\n")
                if passing:
                    end = len(data) if newline < 0 else newline + 1
                    out += data[:end]
                    data = data[end:]
                    passing = newline < 0
                    continue
                if newline < 0:
                    if may_hold(data, self._marker):
                        pending = data
                    else:
                        out += data
                        passing = True
                    break
                line, data = data[: newline + 1], data[newline + 1:]
                if line.rstrip(b"\n") == self._marker:
                    # Everything written before the marker is out before the tap hears of it.
                    _write(2, bytes(out))
                    out.clear()
                    self._send(b"S")
                elif not self._own(line):
                    out += line
            _write(2, bytes(out))
        _write(2, pending)

    def _own(self, line: bytes) -> bool:
        try:
            ours, done = self._parser.feed(line)
            if done is not None:
                self._send(b"C " + _json(_compile_dict(done)))
            return bool(ours)
        except Exception as exc:  # a line tfretrace cannot read is the user's: pass it on
            self._send(b"E " + _json(f"{type(exc).__name__}: {exc}"))
            return False

    def _send(self, message: bytes) -> None:
        if self._back < 0:
            return
        try:
            _write(self._back, message + b"\n", raising=True)
        except OSError:  # the program is gone: keep relaying its children's stderr
            os.close(self._back)
            self._back = -1


def _json(value: object) -> bytes:
    import json  # at the first compile or unreadable line: most runs have neither

    return json.dumps(value).encode()


def _compile_dict(done: Compile) -> dict[str, object]:
    return {
        "cluster": done.cluster,
        "tf_count": done.tf_count,
        "seconds": done.seconds,
        "args": [[a.tf_arg, a.dtype, list(a.shape)] for a in done.args],
    }


def _write(fd: int, data: bytes, raising: bool = False) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            if raising:
                raise
            return  # the original stderr is closed: nothing to pass on to
        view = view[written:]


if __name__ == "__main__":
    main()
