"""The live status line of ``tfretrace run``: counts, throttling, width, and erasing it."""

from __future__ import annotations

import io
from types import SimpleNamespace

import sessions as S
from tfretrace._progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_counts_functions_traces_and_retraces_and_redraws_at_most_four_times_a_second() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, width=200, clock=clock)
    storm = S.storm(6)
    for event in storm.events:  # 6 traces of one function within 0.1 s: one redraw
        progress(SimpleNamespace(key="a", name="train_step"), event)
        clock.now += 0.02
    assert stream.getvalue().count("\r") == 1
    clock.now += 1.0
    progress(SimpleNamespace(key="b", name="eval_step"), S.healthy().events[0])
    assert (progress.traces, progress.retraces, len(progress.functions)) == (7, 5, 2)
    last = stream.getvalue().split("\r")[-1]
    assert last == "tfretrace: 2 functions, 7 traces (5 retraces), last: eval_step\x1b[K"
    progress.clear()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_the_line_never_wraps_and_shows_control_characters_as_escapes() -> None:
    stream = io.StringIO()
    progress = Progress(stream, width=40)
    progress(SimpleNamespace(key="a", name="\x1b]0;pwned\x07" + "n" * 80), S.healthy().events[0])
    line = stream.getvalue().removeprefix("\r").removesuffix("\x1b[K")
    assert len(line) < 40 and "\x1b" not in line


def test_clear_without_a_line_writes_nothing() -> None:
    stream = io.StringIO()
    Progress(stream).clear()
    assert stream.getvalue() == ""


def test_a_name_with_a_newline_stays_on_the_status_line() -> None:
    stream = io.StringIO()
    Progress(stream, width=200)(SimpleNamespace(key="a", name="step\nfake: 0 retraces"), S.healthy().events[0])
    assert "\n" not in stream.getvalue() and "step\\nfake" in stream.getvalue()
