"""The live line ``fix --verify`` shows on a terminal: what it is doing, how far, and the time elapsed."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


class Status:
    """One task at a time (copying, then running) with a bar where the total is known; nothing off a terminal."""

    def __init__(self, stream: TextIO | None, started: float | None = None) -> None:
        live = stream is not None and hasattr(stream, "isatty") and stream.isatty()
        self.started = time.monotonic() if started is None else started
        self._progress: Progress | None = None
        if live:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("tfretrace fix --verify: {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=stream),
                transient=True,
            )
        self._task: TaskID | None = None

    def __enter__(self) -> Status:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def task(self, description: str, total: int | None) -> None:
        """Start the next task (the previous one is done)."""
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, count: int) -> None:
        """``count`` more items of the current task are done."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, count)
