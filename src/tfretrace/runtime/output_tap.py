"""What ``tfretrace run --save`` learns of the program's stdout: a digest of what it printed, never the text.

``sys.stdout`` becomes a text stream like the one Python made (same encoding, errors, line
buffering, file descriptor and ``isatty()``) whose bottom layer writes each block to fd 1 itself,
at once, and feeds the same bytes to a :class:`~tfretrace.records.output.Digester`.

Why in the process and not a relay process on fd 1 (as stderr's XLA tap is): a relay makes
stdout a second pipe, and where stdout and stderr share one terminal or file, a pipe's reader
cannot know which of two streams was written first: tried, a line printed before a warning came
out after it. Written here, synchronously, every byte reaches fd 1 exactly when it would have.
The cost: bytes that bypass ``sys.stdout`` (C code writing to fd 1, as
``tf.print(output_stream=sys.stdout)`` does; child processes; ``os.write(1, ...)``) are not in
the digest. Only stdout is digested; see :class:`OutputTap` for stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

from tfretrace.records.output import Digester, OutputDigest


class _DigestingRaw(io.RawIOBase):
    """fd 1, written through at once; each block's bytes digested as they are written."""

    def __init__(self, fd: int, digester: Digester) -> None:
        super().__init__()
        self._fd = fd
        self._digester = digester

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        written = os.write(self._fd, data)
        self._digester.feed(bytes(memoryview(data)[:written]))
        return written

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def close(self) -> None:
        # fd 1 stays open, as closing Python's own sys.stdout leaves it (closefd=False).
        super().close()


class OutputTap:
    """Digests what the program prints to ``sys.stdout`` from :meth:`start` until :meth:`finish`.

    stderr is not digested: it carries what two runs of one program never share, TensorFlow's
    C++ log lines with their time and thread id, Python's warnings and tracebacks with the
    program's absolute path (``fix --verify`` runs a copy in a temporary folder), and tfretrace's
    own status line and report. A digest of it would say "differs" every time.
    """

    def __init__(self) -> None:
        self._digester = Digester()
        self._original: Any = None
        self._ours: io.TextIOWrapper | None = None
        self.terminal = False

    def start(self) -> None:
        """Put the digesting ``sys.stdout`` in place; OSError or ValueError where there is no usable one."""
        original = sys.stdout
        if original is None:
            raise OSError("no sys.stdout")
        fd = original.fileno()  # io.UnsupportedOperation (an OSError) for a stream without one
        original.flush()
        self.terminal = os.isatty(fd)
        raw = _DigestingRaw(fd, self._digester)
        # Buffered as Python made it: python -u (PYTHONUNBUFFERED) puts no buffer under the text layer.
        buffered = isinstance(getattr(original, "buffer", None), io.BufferedIOBase)
        self._ours = io.TextIOWrapper(
            io.BufferedWriter(raw) if buffered else raw,  # type: ignore[arg-type]
            encoding=original.encoding, errors=original.errors,
            line_buffering=bool(original.line_buffering), write_through=getattr(original, "write_through", False),
        )
        self._original = original
        sys.stdout = self._ours

    def finish(self) -> OutputDigest | None:
        """The digest of what the program printed; ``sys.stdout`` is Python's own again."""
        ours = self._ours
        if ours is None:
            return None
        self._ours = None
        with contextlib.suppress(OSError, ValueError):
            ours.flush()  # what the program left in the buffer is its output, written and digested
        if sys.stdout is ours or getattr(sys.stdout, "closed", False):
            sys.stdout = self._original
        return self._digester.digest(terminal=self.terminal)
