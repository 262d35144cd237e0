"""A stand-in for tfretrace.runtime.monitor so that ``tfretrace run`` is tested without TensorFlow."""

from __future__ import annotations

from tfretrace.records.errors import TensorFlowMissingError
from tfretrace.records.session import Session


class FakeMonitor:
    """Stands in for tfretrace.runtime.monitor so `run` is tested without TensorFlow."""

    def __init__(self, session: Session, missing: bool = False) -> None:
        self.session, self.missing = session, missing
        self.installed: list[bool] = []
        self.stopped = 0
        self.process = False
        self.active = True
        self.kept_for_probe = False

    def install(self, *, warn: bool = True, keep_tf_warning: bool = False) -> FakeMonitor:
        if self.missing:
            raise TensorFlowMissingError("TensorFlow is not installed: pip install tensorflow")
        self.installed.append(warn)
        self.kept_tf_warning = keep_tf_warning
        self.process = True
        return self

    def current(self) -> FakeMonitor | None:
        return self if self.process else None

    def stop_process(self) -> Session:
        """The module's stop(): clears the process monitor, then stops it."""
        if not self.process:
            raise RuntimeError("tfretrace.stop() called without tfretrace.install()")
        self.process = False
        return self.stop()

    def stop(self) -> Session:
        """The monitor's stop(): idempotent."""
        self.halt()
        return self.session

    def halt(self) -> None:
        """The monitor's halt(): stops recording, idempotent."""
        self.stopped += 1 if self.active else 0
        self.active = False

    def keep_for_probe(self) -> None:
        """The monitor's keep_for_probe(): a run that will be asked keeps nested closures alive."""
        self.kept_for_probe = True

    def analyzed(self, *, probe: bool, lint: bool = False) -> Session:
        """The monitor's analyzed(): the fake's session has its plans already."""
        self.probed = probe
        return self.session


SCRIPT = """
import json, sys
print(json.dumps({"argv": sys.argv, "name": __name__,
                  "main": sys.modules["__main__"].__dict__.get("MARK")}))
MARK = "script"
if "--raise" in sys.argv:
    raise ValueError("boom from the script")
if "--exit" in sys.argv:
    sys.exit(int(sys.argv[sys.argv.index("--exit") + 1]))
if "--exit-message" in sys.argv:
    sys.exit("fatal: bad config")
"""
