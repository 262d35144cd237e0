"""The probe the planner asks once a run has finished: the live tf.function, traced afresh with a signature."""

from __future__ import annotations

from tfretrace.fix.plan import Probe
from tfretrace.records.function_report import FunctionReport

_NOT_FOUND = (
    "TensorFlow was not asked (no live tf.function of that name was found to trace: a nested def, a method "
    "of an object that is gone, or a program that is gone): the body sees None where each call had a size"
)


def probe_live(root: str) -> Probe:
    """A probe for the functions of a run whose paths start at ``root``."""

    def probe(report: FunctionReport, signature: str, alias: str) -> str | None:
        from tfretrace._tf.probe import live_function, live_methods, probe_signature

        path = report.location.rpartition(":")[0]
        function = live_function(path, report.name, root)
        # A method: each live instance's own function, probed against its own traces.
        functions = [function] if function is not None else live_methods(path, report.name, root)
        if not functions:
            return _NOT_FOUND
        for each in functions:
            said = probe_signature(each, signature, alias)
            if said is not None:
                return said
        return None

    return probe
