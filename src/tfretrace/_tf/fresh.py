"""A fresh trace of a live function's Python, as every probe makes one: quiet, creating no variable, counted.

The probes (probe, relaxed, zero_probe, tuple_probe) trace the program's functions again once the run
is over, with a new ``tf.function`` of the same Python function. Each trace runs the body's Python
once more: its prints are swallowed, a variable it would create is refused before it is made (the
live object is the program's), and the traces are counted for the run's report, failed ones included.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Traces the probes' fresh tf.functions made, as TensorFlow counts them (each ran the body's
# Python once more): the run's report says how often the program's code ran after it ended.
_bodies_run = [0]


def bodies_run() -> int:
    """How many times the probes have traced a body so far (TensorFlow's tracing counts)."""
    return _bodies_run[0]


def counted(fresh: Any) -> None:
    _bodies_run[0] += fresh.experimental_get_tracing_count()


def failed() -> None:
    """A trace that raised: the body's Python ran up to the failure, which TensorFlow's count leaves out."""
    _bodies_run[0] += 1


CREATES = (
    "tracing it would create a variable ({}) on the live object, so TensorFlow cannot be asked once the run is "
    "over (the variables the first call made do not cover it)"
)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The body's prints while tracing, swallowed: the program's output is what python gives."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


@contextlib.contextmanager
def no_new_variables(tf: Any) -> Iterator[list[str]]:
    """A trace that creates no variable: a creation raises instead, its name kept in the list yielded.

    The probe traces the program's live objects once the run is over (a Keras model and optimizer
    built at the first train step exist by then). A trace that would still create one would build
    state on the user's object; it is stopped, and the question is not answered.
    """
    created: list[str] = []

    def refuse(next_creator: Any, **kwargs: Any) -> Any:
        created.append(str(kwargs.get("name") or "unnamed"))
        raise RuntimeError("tfretrace's probe does not create variables")

    with tf.variable_creator_scope(refuse):
        yield created


@dataclass(frozen=True)
class Untraced:
    """A fresh trace that did not happen: the variable it would have created, or what TensorFlow raised."""

    created: str | None
    raised: BaseException

    def why(self) -> str:
        """The variable it would create, said as the probes say it; else TensorFlow's error in one line."""
        return CREATES.format(self.created) if self.created else one_line(self.raised)


def fresh_trace(tf: Any, fresh: Any, args: Any, kwargs: Any) -> Any:
    """``fresh``'s concrete function for these arguments, traced quietly and creating no variable; an ``Untraced``
    where it would create one or TensorFlow raised (counted: the body's Python ran up to there)."""
    created: list[str] = []
    try:
        with quiet(), no_new_variables(tf) as created:
            return fresh.get_concrete_function(*args, **kwargs)
    except Exception as exc:  # what TensorFlow says of the body with these arguments
        failed()
        return Untraced(created[0] if created else None, exc)


# ANSI colour codes Keras puts in its messages.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def one_line(exc: BaseException) -> str:
    """TensorFlow's error in one line: the exception's own line after the user-code frames, and what follows."""
    name = type(exc).__name__
    lines = [_ANSI.sub("", line).strip() for line in str(exc).splitlines()]
    lines = [line for line in lines if line]
    at = next((i for i, line in enumerate(lines) if line.startswith(f"{name}:")), None)
    if at is None:
        return f"{name}: {lines[-1][:200] if lines else ''}"
    text = " ".join(lines[at:at + 2])
    return text[:240]
