"""Unlinking frames from an exception's traceback, so that users see their own code and the message."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

# The folder of tfretrace's own modules (with a trailing separator), to tell its frames apart.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def unlink_frames(exc: BaseException, drop: Callable[[str], bool]) -> None:
    """Remove from ``exc``'s traceback every frame whose file name ``drop`` accepts.

    When every frame would go (an error inside tfretrace itself), the traceback is kept whole:
    then those frames are the information.
    """
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        if not drop(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    if not kept:
        return
    for before, after in itertools.pairwise(kept):
        before.tb_next = after
    kept[-1].tb_next = None
    exc.__traceback__ = kept[0]
