"""The process-wide dispatch: one set of TensorFlow hooks shared by every active monitor."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tfretrace._tf import logfilter
from tfretrace._util.text import split_site
from tfretrace.records.errors import RetraceError, UnsupportedVersionError, UntestedVersionWarning
from tfretrace.runtime.xla_watch import XlaWatch

if TYPE_CHECKING:
    from tfretrace.runtime.intake import Pending


class Watcher(Protocol):
    """What the dispatch asks of a monitor (runtime.monitor.Monitor is one); the monitor imports the dispatch."""

    keep_tf_warning: bool

    def internal_error(self, exc: BaseException) -> None:
        """Count an error inside tfretrace."""

    def before_trace(self, raw: Any) -> Pending | None:
        """Explain the trace about to happen; a budget may raise RetraceError."""

    def refuse(self, pending: Pending) -> None:
        """A budget refused the trace begun with ``pending``."""

    def after_trace(
        self, raw: Any, pending: Pending, seconds: float, ok: bool, cluster: str | None = None,
        own: float | None = None, announce: bool = True, draw: str | None = None,
    ) -> bool:
        """Record the finished trace; True when it was announced."""


class Dispatch:
    """The active monitors and the one set of TensorFlow hooks they share."""

    def __init__(self) -> None:
        self._monitors: list[Watcher] = []
        self._hooks: Any = None
        self._lock = threading.Lock()
        self._unavailable: str | None = None
        self._tf_filter = logfilter.TFRetracingFilter(
            lambda: any(not m.keep_tf_warning for m in self._monitors)
        )
        self.xla = XlaWatch()

    def add(self, monitor: Watcher) -> None:
        from tfretrace._tf import hooks
        from tfretrace._tf.frames import call_site

        # Before TensorFlow loads: ask it to log XLA compiles.
        self.xla.prepare()
        self.xla.arm(monitor.internal_error)
        site = call_site(sys._getframe(1))
        with self._lock:
            if self._hooks is None:
                self._hooks = hooks.Hooks(self._on_trace, self._after_trace)
            if not monitor.keep_tf_warning:
                self._tf_filter.attach()
            if "tensorflow" in sys.modules:
                self._install(site)
            elif not self._hooks.installed:
                # Nothing can trace before TensorFlow loads; loading it here would run the
                # program's first lines after TensorFlow read its settings (TF_USE_LEGACY_KERAS).
                self._hooks.install_when_loaded(lambda: self._install_late(site))
            if monitor not in self._monitors:
                self._monitors.append(monitor)

    def _install_late(self, site: str | None) -> None:
        """The program imported TensorFlow: patch it now, unless every monitor has stopped."""
        with self._lock:
            if self._monitors:
                self._install(site, late=True)

    def _install(self, site: str | None, late: bool = False) -> None:
        from tfretrace._tf import hooks

        try:
            self._hooks.install()
            self._unavailable = None
            self.xla.loaded()
        except (hooks.HookUnavailable, UnsupportedVersionError) as exc:
            if not late and isinstance(exc, UnsupportedVersionError):
                raise
            # Nothing was patched: the program runs on unobserved and the session says so
            # (an old TensorFlow found only inside the program's import cannot stop it there).
            if self._unavailable != str(exc):
                filename, lineno = split_site(site)
                text = f"tfretrace: {exc}"
                warnings.warn_explicit(text, UntestedVersionWarning, filename, lineno, module="tfretrace")
            self._unavailable = str(exc)

    def notes(self) -> list[str]:
        """Version notes and what could not be observed, for the session."""
        notes = list(self._hooks.notes) if self._hooks is not None else []
        if self._unavailable is not None:
            notes.append(self._unavailable)
        if self.xla.note is not None:
            notes.append(self.xla.note)
        return notes

    def remove(self, monitor: Watcher) -> None:
        with self._lock:
            if monitor in self._monitors:
                self._monitors.remove(monitor)
            if all(m.keep_tf_warning for m in self._monitors):
                self._tf_filter.detach()  # on TensorFlow's logger only while some monitor hides
            if not self._monitors and self._hooks is not None:
                self._hooks.uninstall()
        if not self._monitors:
            self.xla.stop()

    def _on_trace(self, read: Callable[[], Any]) -> Any:
        monitors = list(self._monitors)
        if not monitors:
            return None
        try:
            raw = read()
        except Exception as exc:
            for monitor in monitors:
                monitor.internal_error(exc)
            return None
        pendings: list[tuple[Watcher, Pending | None]] = []
        refused: RetraceError | None = None
        for monitor in monitors:
            try:
                pendings.append((monitor, monitor.before_trace(raw)))
            except RetraceError as exc:
                refused = refused or exc
        if refused is not None:
            # A budget refused the trace: every monitor records it as refused, none as traced.
            for monitor, pending in pendings:
                if pending is not None:
                    monitor.refuse(pending)
            raise refused
        return raw, pendings

    def _after_trace(
        self, token: Any, seconds: float, ok: bool, cluster: str | None, own: float | None = None,
        draw: str | None = None,
    ) -> None:
        raw, pendings = token
        announced = False
        for monitor, pending in pendings:
            if pending is not None:
                # Nested watch() blocks record the trace each, and announce it once.
                announced = (
                    monitor.after_trace(raw, pending, seconds, ok, cluster, own, not announced, draw) or announced
                )


dispatch = Dispatch()
