"""One call watcher for every running prevention: stopping one leaves the others warming."""

from __future__ import annotations

import threading
from typing import Any

# Every prevention started and not stopped, oldest first: one call watcher serves them all, so
# stopping one (a notebook cell re-run, ``p1.stop()`` after ``p2 = prevent(...)``) leaves the
# others warming.
_ACTIVE: list[Any] = []
_PREVIOUS: list[Any] = [None]
_ACTIVE_LOCK = threading.Lock()


def attach(prevention: Any) -> None:
    """Start sending calls to ``prevention`` (after the ones already started)."""
    from tfretrace._tf.counters import set_call_watch

    with _ACTIVE_LOCK:
        if not _ACTIVE:
            _PREVIOUS[0] = set_call_watch(_dispatch)
        _ACTIVE.append(prevention)


def detach(prevention: Any) -> None:
    """Stop sending calls to ``prevention``; the others go on."""
    from tfretrace._tf.counters import set_call_watch

    with _ACTIVE_LOCK:
        if prevention in _ACTIVE:
            _ACTIVE.remove(prevention)
        if not _ACTIVE:
            set_call_watch(_PREVIOUS[0])
            _PREVIOUS[0] = None


def _dispatch(function: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> Any:
    # A plain loop, no comprehension: the watchers find the caller's frame a fixed depth up
    # (tfretrace._tf.warmup.caller_frame), and a comprehension is a frame of its own before 3.12.
    afters = []
    for prevention in tuple(_ACTIVE):
        after = prevention.watch_call(function, args, kwds)
        if after is not None:
            afters.append(after)
    if not afters:
        return None
    if len(afters) == 1:
        return afters[0]

    def after_all() -> None:
        for after in afters:
            after()

    return after_all
