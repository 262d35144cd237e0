"""Retraces in TensorBoard: per function, traces and trace seconds as scalars and each retrace as text."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from tfretrace.explain.messages import format_event
from tfretrace.records import catalogue
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_report import FunctionReport
from tfretrace.records.session import Session

# Event files this module writes end in this, beside the user's own in the same folder.
SUFFIX = ".tfretrace"
_UNSAFE_TAG = re.compile(r"[^A-Za-z0-9_.\-<>]+")


class TensorBoardMissingError(RuntimeError):
    """--tensorboard / RetraceCallback(tensorboard=...) needs the tensorboard package."""


def check_available() -> None:
    """Raise TensorBoardMissingError (one line) unless tensorboard can be imported."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise TensorBoardMissingError(
            "writing to TensorBoard needs the tensorboard package: pip install tensorboard"
        ) from None


def board_name(name: str, keras_name: str | None) -> str:
    """The name a function is logged under: ``model.method.inner`` for Keras, else its qualname.

    Keras builds several tf.functions per method (one step, several steps): each keeps its own
    curve.
    """
    return name if keras_name is None else f"{keras_name}.{name.rsplit('.', 1)[-1]}"


def tag_name(report_name: str) -> str:
    """A function's name as one tag segment: TensorBoard groups tags by their ``/`` parts."""
    return _UNSAFE_TAG.sub("_", report_name).strip("_") or "function"


class TensorBoardLog:
    """An event file in ``logdir`` written with TensorBoard's own writer and protos (no TensorFlow).

    Tags: ``tfretrace/<function>/traces`` and ``tfretrace/<function>/trace_seconds`` (scalars,
    cumulative, at the step of each trace) and ``tfretrace/<function>/retrace`` (text: the
    explanation and the fix of each retrace, at its step).
    """

    def __init__(self, logdir: str | os.PathLike[str]) -> None:
        check_available()
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        os.makedirs(logdir, exist_ok=True)
        self.logdir = str(logdir)
        self._writer = EventFileWriter(self.logdir, filename_suffix=SUFFIX)

    def scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        """One scalar point, shown by TensorBoard's scalars dashboard."""
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.plugins.scalar import metadata
        from tensorboard.util import tensor_util

        summary = summary_pb2.Summary()
        summary.value.add(
            tag=tag,
            tensor=tensor_util.make_tensor_proto(float(value)),
            metadata=metadata.create_summary_metadata(display_name=tag, description=""),
        )
        self._event(summary, step, wall_time)

    def text(self, tag: str, markdown: str, step: int, wall_time: float) -> None:
        """One text entry (markdown), shown by TensorBoard's text dashboard."""
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.plugins.text import metadata
        from tensorboard.util import tensor_util

        summary = summary_pb2.Summary()
        summary.value.add(
            tag=tag,
            tensor=tensor_util.make_tensor_proto(markdown),
            metadata=metadata.create_summary_metadata(display_name=tag, description=""),
        )
        self._event(summary, step, wall_time)

    def _event(self, summary: Any, step: int, wall_time: float) -> None:
        from tensorboard.compat.proto import event_pb2

        self._writer.add_event(event_pb2.Event(summary=summary, step=int(step), wall_time=wall_time))

    def trace(self, report_name: str, location: str, event: TraceEvent, step: int,
              wall_time: float, traces: int, seconds: float) -> None:
        """The scalars of one trace and, for a retrace, its explanation as text."""
        prefix = f"tfretrace/{tag_name(report_name)}"
        self.scalar(f"{prefix}/traces", traces, step, wall_time)
        self.scalar(f"{prefix}/trace_seconds", seconds, step, wall_time)
        if event.is_retrace:
            self.text(f"{prefix}/retrace", explanation(report_name, location, event), step, wall_time)

    def flush(self) -> None:
        """Write what is buffered to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self._writer.close()


def explanation(name: str, location: str, event: TraceEvent) -> str:
    """A retrace as markdown: what changed (as the warning says it), why it retraces, the fix."""
    lines = ["```", format_event(name, location, event), "```"]
    try:
        cause = catalogue.get(event.cause)
    except KeyError:  # a cause from a newer tfretrace: the event's own text stands alone
        return "\n".join(lines)
    if cause:
        lines += ["", f"**Why ({cause.slug}, {cause.code}):** {cause.why}", "", f"**Fix:** {cause.fix}"]
    return "\n".join(lines)


def step_of(event: TraceEvent) -> int:
    """The step a trace is plotted at in ``tfretrace run``: the function's calls when it traced."""
    return event.calls_total if event.calls_total is not None else event.index


def write_session(session: Session, logdir: str | os.PathLike[str]) -> int:
    """Write every recorded trace of ``session`` to a new event file in ``logdir``; returns the count."""
    log = TensorBoardLog(logdir)
    written = 0
    try:
        for report in session.functions:
            written += _write_function(log, report, session.started_at)
    finally:
        log.close()
    return written


def _write_function(log: TensorBoardLog, report: FunctionReport, started_at: float) -> int:
    seconds = 0.0
    events: Iterable[TraceEvent] = report.events
    for event in events:
        seconds += event.seconds
        keras = None if report.keras is None else f"{report.keras.model}.{report.keras.method}"
        log.trace(board_name(report.name, keras), report.location, event, step_of(event),
                  started_at + event.time, event.index, seconds)
    return len(report.events)
