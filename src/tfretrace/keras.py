"""RetraceCallback: a Keras callback that monitors fit/evaluate/predict, logs retraces and keeps the session."""

from __future__ import annotations

import importlib
import logging
import os
import time
from typing import Any

from tfretrace._tf.versions import keras_package
from tfretrace.explain.messages import format_event
from tfretrace.integrations.tensorboard import TensorBoardLog, board_name
from tfretrace.records.errors import RetraceError
from tfretrace.records.events import TraceEvent
from tfretrace.records.session import Session
from tfretrace.runtime.monitor import Monitor

logger = logging.getLogger("tfretrace")


def _callback_base() -> Any:
    """The Callback class of the Keras that tf.keras is: Keras 2's own CallbackList needs its own."""
    package = keras_package() or "keras"  # TensorFlow's rule: tf_keras under TF_USE_LEGACY_KERAS
    return importlib.import_module(f"{package}.callbacks").Callback


_Callback: Any = _callback_base()


class RetraceCallback(_Callback):  # type: ignore[misc]
    """Monitor the traces of a model's fit/evaluate/predict.

    At each epoch end the retraces seen since the last report are logged to the ``tfretrace``
    logger (WARNING). With ``max_retraces`` set, the run fails with :class:`RetraceError` (carrying
    the explanation of the offending retrace) as soon as an epoch ends past the budget, and again
    at the end of evaluate/predict. ``save_to`` writes the session JSON when training ends.
    The monitor keeps running across fit, evaluate and predict calls that get this callback, so
    ``callback.session()`` covers all of them.
    """

    def __init__(
        self, max_retraces: int | None = None, *, save_to: str | None = None, warn: bool = False,
        tensorboard: str | None = None, max_xla_compiles: int | None = None,
    ) -> None:
        super().__init__()
        if max_retraces is not None and max_retraces < 0:
            raise ValueError("max_retraces must be >= 0")
        if max_xla_compiles is not None and max_xla_compiles < 0:
            raise ValueError("max_xla_compiles must be >= 0")
        self.max_retraces = max_retraces
        # Checked and made absolute now: a bad path fails here, not after hours of training, and
        # a chdir() during training does not move the file.
        self.save_to = None if save_to is None else _checked_output(save_to)
        # XLA compiles of every function the callback sees (jit_compile=True or "auto" on GPUs).
        self.max_xla_compiles = max_xla_compiles
        self.monitor = Monitor(warn=warn, log=False)
        # TensorBoard: each trace's scalars at the training step it happened (batches seen).
        self.step = 0
        self.board = None if tensorboard is None else TensorBoardLog(tensorboard)
        if self.board is not None:
            self.monitor.add_listener(self._to_tensorboard)
        self._depth = 0
        self._reported = 0
        self.epoch_retraces: list[int] = []
        self._locations: dict[str, str] = {}

    # -- what users read --------------------------------------------------------------------

    def session(self) -> Session:
        """Everything recorded so far (a snapshot)."""
        return self.monitor.session()

    def retraces(self) -> list[tuple[str, TraceEvent]]:
        """(function name, event) for every unexpected retrace recorded, oldest first."""
        found: list[tuple[str, TraceEvent]] = []
        for state in self.monitor.states():
            self._locations[state.name] = state.location
            found.extend((state.name, e) for e in state.events() if e.is_retrace)
        found.sort(key=lambda item: item[1].time)
        return found

    # -- Keras hooks ------------------------------------------------------------------------

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._begin()

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._begin()

    def on_predict_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._begin()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.step += 1

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.board is not None:
            self.board.flush()
        new = self._report_new(f"epoch {epoch}")
        self.epoch_retraces.append(new)
        self._check_budget()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._end()
        if self.save_to:
            try:
                self.monitor.session().save(self.save_to)
            except OSError as exc:  # a full disk must not turn a finished fit into a crash
                logger.error("tfretrace: could not save the session to %s: %s", self.save_to, exc)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        self._end()

    def on_predict_end(self, logs: dict[str, Any] | None = None) -> None:
        self._end()

    # -- internals --------------------------------------------------------------------------

    def _begin(self) -> None:
        # fit runs evaluate's hooks inside its own (validation): count nesting, stop at the outermost end.
        if self._depth == 0 and not self.monitor.active:
            self.monitor.start()
        self._depth += 1

    def _to_tensorboard(self, state: Any, event: TraceEvent) -> None:
        assert self.board is not None
        keras = None if event.keras is None else f"{event.keras.model}.{event.keras.method}"
        name = board_name(state.name, keras)
        self.board.trace(name, state.location, event, self.step, time.time(), state.traces, state.seconds)

    def _end(self) -> None:
        self._depth = max(self._depth - 1, 0)
        if self._depth == 0 and self.board is not None:
            self.board.flush()
        if self._depth == 0:
            self._report_new("end")
            self.monitor.stop()
            self._check_budget()

    def _total_retraces(self) -> int:
        # The exact counters: the kept event history is bounded and may miss retraces.
        return sum(state.retraces for state in self.monitor.states())

    def _report_new(self, when: str) -> int:
        total = self._total_retraces()
        new = total - self._reported
        self._reported = total
        if new <= 0:
            return 0
        kept = self.retraces()[-new:]
        for name, event in kept:
            logger.warning("%s: %s", when, format_event(name, self._locations.get(name, "?"), event))
        if len(kept) < new:
            logger.warning("%s: %d more retraces beyond the kept event history", when, new - len(kept))
        return new

    def _check_budget(self) -> None:
        self._check_xla_budget()
        if self.max_retraces is None:
            return
        total = self._total_retraces()
        if total > self.max_retraces:
            retraces = self.retraces()
            which = "the first over budget"
            if len(retraces) == total:
                name, event = retraces[self.max_retraces]
            else:  # the bounded history dropped some: the latest one kept is still over budget
                name, event = retraces[-1]
                which = "the latest over budget"
            self._fail(
                f"budget exceeded: {total} retraces > max_retraces={self.max_retraces}; {which}:\n"
                f"{format_event(name, self._locations.get(name, '?'), event)}",
                event.cause,
            )

    def _fail(self, message: str, cause: str) -> None:
        if self.model is not None:
            self.model.stop_training = True
        # Keras will not call on_train_end after this error: stop watching now.
        self._depth = 0
        self.monitor.stop()
        error = RetraceError(message)
        error.cause = cause
        raise error

    def _check_xla_budget(self) -> None:
        if self.max_xla_compiles is None:
            return
        self.monitor.sync_xla()  # the compiles TensorFlow logged during the epoch
        states = self.monitor.states()
        total = sum(state.xla_compiles for state in states)
        if total <= self.max_xla_compiles:
            return
        events = sorted(((s.name, e) for s in states for e in (*s.xla_head, *s.xla_tail)), key=lambda p: p[1].time)
        name, event = events[min(self.max_xla_compiles, len(events) - 1)]
        self._fail(
            f"budget exceeded: {total} XLA compiles > max_xla_compiles={self.max_xla_compiles}; "
            f"the first over budget: {name}: {event.line()}",
            event.cause,
        )


def _checked_output(path: str) -> str:
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise ValueError(f"save_to={path!r} is a folder, not a file")
    if not os.path.isdir(os.path.dirname(full)):
        raise ValueError(f"save_to={path!r}: folder {os.path.dirname(full)!r} does not exist")
    return full
