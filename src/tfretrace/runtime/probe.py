"""The probe the planner asks once a run has finished: the live tf.function, traced afresh with a signature."""

from __future__ import annotations

from tfretrace.fix.plan import Probe
from tfretrace.records.function_report import FunctionReport

_NOT_FOUND = (
    "TensorFlow was not asked (no module-level tf.function of that name was found to trace: a nested def, a "
    "method, or a program that is gone): the body sees None where each call had a size"
)


def probe_live(root: str) -> Probe:
    """A probe for the functions of a run whose paths start at ``root``."""

    def probe(report: FunctionReport, signature: str, alias: str) -> str | None:
        from tfretrace._tf.probe import live_function, probe_signature

        function = live_function(report.location.rpartition(":")[0], report.name, root)
        if function is None:
            return _NOT_FOUND
        return probe_signature(function, signature, alias)

    return probe
