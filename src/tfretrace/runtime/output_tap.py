"""What ``tfretrace run --save`` learns of the program's stdout: a digest of what it printed, never the text.

``sys.stdout`` and ``sys.__stdout__`` become one text stream built as Python's start-up builds
its own (``create_stdio``): a ``FileIO`` on fd 1 named ``<stdout>``, under a ``BufferedWriter``
of the very same buffer size (none under ``python -u``), under a ``TextIOWrapper`` with the same
encoding, errors, newline, line buffering and ``mode``. The only change is that the ``FileIO``
also feeds the bytes it wrote to a :class:`~tfretrace.records.output.Digester`. Same classes and
sizes mean the same ``write()`` calls on fd 1, so blocks, ordering against stderr and broken
pipes behave as under python; both names are one object, so ``sys.stdout = sys.__stdout__``
(undoing a silenced call) keeps printing into the record, in order.

Why in the process and not a relay on fd 1 (a pipe and a reader thread, as stderr's XLA tap
is): fd 1 would be a pipe, so ``isatty()`` turns false on a terminal (progress bars, colours
change), and where stdout and stderr share one terminal or file, a pipe's reader cannot know
which of two streams was written first: tried, a line printed before a warning came out after
it. Written here, synchronously, every byte reaches fd 1 exactly when it would have. The cost:
bytes that bypass ``sys.stdout`` (C code writing to fd 1, as ``tf.print(output_stream=sys.stdout)``
does; child processes; ``os.write(1, ...)``) are not in the digest, and
``type(sys.stdout.buffer.raw)`` is a subclass of ``io.FileIO`` rather than ``io.FileIO`` itself.
Only stdout is digested; see :class:`OutputTap` for stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

from tfretrace.records.output import Digester, OutputDigest


class _DigestingFileIO(io.FileIO):
    """fd 1 as Python's own raw stdout; each block's bytes digested once written."""

    digester: Digester | None = None

    def write(self, data: Any) -> int | None:  # type: ignore[override]
        written = super().write(data)
        if written and self.digester is not None:  # None: a non-blocking fd took nothing
            self.digester.feed(bytes(memoryview(data).cast("B")[:written]))
        return written


def _buffer_size(buffered: io.BufferedIOBase, fd: int) -> int:
    """The buffer size of Python's own ``sys.stdout.buffer``: its blocks are then ours.

    CPython exposes it only through ``__sizeof__`` (the object plus its buffer); elsewhere the
    size ``open()`` picks for the fd, as Python's start-up did.
    """
    with contextlib.suppress(AttributeError, TypeError):
        size = int(buffered.__sizeof__()) - int(type(buffered).__basicsize__)
        if size > 0:
            return size
    with contextlib.suppress(OSError):
        block = os.fstat(fd).st_blksize
        if block > 1:
            return int(block)
    return io.DEFAULT_BUFFER_SIZE


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
        self._original_dunder: Any = None
        self._ours: io.TextIOWrapper | None = None
        self._raw: _DigestingFileIO | None = None
        self.terminal = False

    def start(self) -> None:
        """Put the digesting stdout in place; OSError or ValueError where there is no usable one."""
        original = sys.stdout
        if original is None:
            raise OSError("no sys.stdout")
        fd = original.fileno()  # io.UnsupportedOperation (an OSError) for a stream without one
        original.flush()
        self.terminal = os.isatty(fd)
        raw = _DigestingFileIO(fd, "wb", closefd=False)
        raw.name = getattr(original, "name", "<stdout>")
        raw.digester = self._digester
        # Buffered as Python made it: python -u (PYTHONUNBUFFERED) puts no buffer under the text layer.
        buffer = getattr(original, "buffer", None)
        layer: Any = raw
        if isinstance(buffer, io.BufferedIOBase):
            layer = io.BufferedWriter(raw, _buffer_size(buffer, fd))
        ours = io.TextIOWrapper(
            layer, encoding=original.encoding, errors=original.errors,
            newline=None if os.name == "nt" else "\n",  # what create_stdio passes
            line_buffering=bool(original.line_buffering), write_through=bool(getattr(original, "write_through", False)),
        )
        ours.mode = getattr(original, "mode", "w")  # type: ignore[misc]  # set on Python's own too
        self._original, self._original_dunder = original, sys.__stdout__
        self._ours, self._raw = ours, raw
        sys.stdout = ours
        if sys.__stdout__ is original:
            sys.__stdout__ = ours  # type: ignore[misc]

    def finish(self) -> OutputDigest | None:
        """The digest of what the program printed; ``sys.stdout`` is Python's own again."""
        ours, raw = self._ours, self._raw
        if ours is None or raw is None:
            return None
        self._ours = None
        with contextlib.suppress(OSError, ValueError):
            ours.flush()  # what the program left in the buffer is its output, written and digested
        raw.digester = None  # what anything still holding our stream writes later is not the program's
        if sys.stdout is ours or getattr(sys.stdout, "closed", False):
            sys.stdout = self._original
        if sys.__stdout__ is ours:
            sys.__stdout__ = self._original_dunder  # type: ignore[misc]
        return self._digester.digest(terminal=self.terminal)
