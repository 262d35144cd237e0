"""Hiding exactly TensorFlow's own "N out of the last M calls ... triggered tf.function retracing" log line."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

# TensorFlow logs it (polymorphic_function.py, _FrequentTracingDetector) through the Python
# logger "tensorflow"; the text has been the same since TF 2.2. Anything else TF logs passes.
_RETRACING = re.compile(r"\d+ out of the last \d+ calls to .+ triggered tf\.function retracing\.", re.S)
LOGGER = "tensorflow"


def is_tf_retracing_warning(message: str) -> bool:
    """True for TensorFlow's frequent-retracing warning, which tfretrace's report replaces."""
    return _RETRACING.match(message) is not None


class TFRetracingFilter(logging.Filter):
    """Drops TensorFlow's retracing warning while ``hiding()`` says a monitor wants it hidden."""

    def __init__(self, hiding: Callable[[], bool]) -> None:
        super().__init__()
        self._hiding = hiding

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record but the retracing warning (kept too when no monitor hides it)."""
        if record.levelno != logging.WARNING or not self._hiding():
            return True
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format is not ours to judge
            return True
        return not is_tf_retracing_warning(message)

    def attach(self) -> None:
        """Add this filter to TensorFlow's logger (idempotent)."""
        logger = logging.getLogger(LOGGER)
        if self not in logger.filters:
            logger.addFilter(self)

    def detach(self) -> None:
        """Remove this filter from TensorFlow's logger."""
        logging.getLogger(LOGGER).removeFilter(self)
