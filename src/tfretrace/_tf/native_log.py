"""TensorFlow's native (C++) log lines while tfretrace runs traces on inputs it made: kept off the user's stderr.

Running a recorded trace on edge values (run_compare: an int32 max as a token id) makes TensorFlow's
executor log, from C++ straight to file descriptor 2, a warning per refused input ("Local
rendezvous is aborting ... indices[0,0] = ... is not in [0, 200)"), after the program has ended.
They are tfretrace's doing, not the program's: while the runs last, descriptor 2 is held in a
temporary file; afterwards every line but TensorFlow's own log lines (and their tab-indented
continuations) is written back, so no byte another thread wrote there is lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

# TensorFlow's native log line: severity letter, month and day ("W0000 00:00:1795932555.840044 ...").
_NATIVE = re.compile(rb"[IWEF]\d{4} \d\d:\d\d:\d\d")
_STDERR = 2


@contextlib.contextmanager
def native_log_held() -> Iterator[None]:
    """Hold descriptor 2 for the block; write back what TensorFlow's native logging did not write."""
    with contextlib.suppress(Exception):  # a replaced sys.stderr may not flush: nothing of ours is lost
        sys.stderr.flush()
    try:
        saved = os.dup(_STDERR)
    except OSError:  # no descriptor 2 to hold: run as is
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), _STDERR)
        try:
            yield
        finally:
            os.dup2(saved, _STDERR)
            os.close(saved)
            held.seek(0)
            _write_all(others(held.read()))


def others(data: bytes) -> bytes:
    """``data`` without TensorFlow's native log lines and the tab-indented lines that continue them."""
    kept: list[bytes] = []
    native = False
    for line in data.splitlines(keepends=True):
        if _NATIVE.match(line):
            native = True
            continue
        if native and line.startswith(b"\t"):
            continue
        native = False
        kept.append(line)
    return b"".join(kept)


def _write_all(data: bytes) -> None:
    while data:
        written = os.write(_STDERR, data)
        data = data[written:]
