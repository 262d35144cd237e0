"""Running a callback right before or after a package's own import (Keras patches, deferred TF hooks, the log tap)."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable
from typing import Any


class ImportWatcher:
    """A meta-path finder that runs a callback once one of the watched packages has been imported (or before).

    It finds nothing itself: it asks the other finders for the real spec and wraps its loader, so
    the package imports exactly as it would without it, and the callback runs when the package's
    top-level code is done. The callback must never break that import: its errors are dropped.
    """

    def __init__(self, names: set[str], callback: Callable[[str], None] | None = None,
                 before: Callable[[str], None] | None = None) -> None:
        # ``before`` runs as the package's own code is about to start (its settings still unread).
        self._names = names
        self._callback = callback
        self._before = before
        self._busy = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self._names or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        loader, callback, before = spec.loader, self._callback, self._before
        original_exec = loader.exec_module

        def exec_module(module: Any) -> None:
            if before is not None:
                with contextlib.suppress(Exception):
                    before(name)
            original_exec(module)
            if callback is not None:
                with contextlib.suppress(Exception):
                    callback(name)

        spec.loader = _LoaderProxy(loader, exec_module)  # type: ignore[assignment]
        return spec


class _LoaderProxy:
    """Delegates to a real loader, with exec_module replaced."""

    def __init__(self, loader: Any, exec_module: Callable[[Any], None]) -> None:
        self._loader = loader
        self.exec_module = exec_module

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
