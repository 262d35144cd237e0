"""RetraceCallback: a Keras callback that monitors fit/evaluate/predict, logs retraces and keeps the session."""

from __future__ import annotations

import logging
from typing import Any

import keras

from tfretrace.errors import RetraceError
from tfretrace.events import TraceEvent
from tfretrace.messages import format_event
from tfretrace.monitor import Monitor
from tfretrace.session import Session

logger = logging.getLogger("tfretrace")



class RetraceCallback(keras.callbacks.Callback):  # type: ignore[misc]
    """Monitor the traces of a model's fit/evaluate/predict.

    At each epoch end the retraces seen since the last report are logged to the ``tfretrace``
    logger (WARNING). With ``max_retraces`` set, the run fails with :class:`RetraceError` (carrying
    the explanation of the offending retrace) as soon as an epoch ends past the budget, and again
    at the end of evaluate/predict. ``save_to`` writes the session JSON when training ends.
    The monitor keeps running across fit, evaluate and predict calls that get this callback, so
    ``callback.session()`` covers all of them.
    """

    def __init__(self, max_retraces: int | None = None, *, save_to: str | None = None, warn: bool = False) -> None:
        super().__init__()
        if max_retraces is not None and max_retraces < 0:
            raise ValueError("max_retraces must be >= 0")
        self.max_retraces = max_retraces
        self.save_to = save_to
        self.monitor = Monitor(warn=warn, log=False)
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

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        new = self._report_new(f"epoch {epoch}")
        self.epoch_retraces.append(new)
        self._check_budget()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._end()
        if self.save_to:
            self.monitor.session().save(self.save_to)

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

    def _end(self) -> None:
        self._depth = max(self._depth - 1, 0)
        if self._depth == 0:
            self._report_new("end")
            self.monitor.stop()
            self._check_budget()

    def _report_new(self, when: str) -> int:
        retraces = self.retraces()
        new = retraces[self._reported :]
        self._reported = len(retraces)
        for name, event in new:
            logger.warning("%s: %s", when, format_event(name, self._locations.get(name, "?"), event))
        return len(new)

    def _check_budget(self) -> None:
        if self.max_retraces is None:
            return
        retraces = self.retraces()
        if len(retraces) > self.max_retraces:
            name, event = retraces[self.max_retraces]
            if self.model is not None:
                self.model.stop_training = True
            # Keras will not call on_train_end after this error: stop watching now.
            self._depth = 0
            self.monitor.stop()
            error = RetraceError(
                f"RetraceError: budget exceeded: {len(retraces)} retraces > max_retraces="
                f"{self.max_retraces}; the first over budget:\n"
                f"{format_event(name, self._locations.get(name, '?'), event)}"
            )
            error.cause = event.cause
            raise error
