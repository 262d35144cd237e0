"""The probe the planner asks once a run has finished: the live tf.function, traced afresh with generalized inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfretrace.records.function_report import FunctionReport

if TYPE_CHECKING:  # the planner loads with the analysis that asks the probe, not with the monitor
    from tfretrace.fix.planning.plan import Probe

_NOT_FOUND = (
    "TensorFlow was not asked (no live tf.function of that name was found to trace: a nested def, a method "
    "of an object that is gone, or a program that is gone): the body sees None where each call had a size"
)
# A nested def asked as hoisted (hoist-def) whose tf.function objects, and their traces, are gone.
_NO_NESTED_TRACE = (
    "TensorFlow was not asked: no recorded trace of the nested def was kept to run beside the def as hoisted"
)


# Objects of a nested def whose closures hold other cells: the def's enclosing function ran more than once.
_OTHER_CELLS = (
    "TensorFlow was not asked: the objects close over other cells (the function around the outer def ran "
    "again), so one def there would still make one object per run of it"
)


class _LiveProbe:
    """Traces the run's own functions (found under ``root``) with a signature text, or an argument as a tensor."""

    def __init__(self, root: str) -> None:
        self._root = root

    def _functions(self, report: FunctionReport, edited: tuple[str, int] | None = None) -> list[object]:
        from tfretrace._tf.live_functions import (
            closures,
            factory_made,
            live_function,
            live_methods,
            nested_functions,
        )

        path = report.location.rpartition(":")[0]
        if edited is not None and "<locals>" in report.name:
            # A nested def as a hoist-def step writes it (the planner's ``edited``): each tf.function
            # object its outer def made, whose traces the def so rebuilt runs beside (_tf.edited).
            return nested_functions(path, report.name, self._root)
        if "<locals>" in report.name:
            # A factory's tf.function bound to a module-level name (a factory called once, as round 1
            # of --verify's rounds writes it): asked only where the run made that one object, whose
            # cache holds every trace; several objects may each close over other values.
            # Else the closures the run made, kept alive (a train step nested in a function that
            # returned, over its model and optimizer): asked only where every object the run made is.
            made = factory_made(path, report.name, self._root) if report.objects == 1 else None
            if made is not None:
                return [made]
            kept = closures(path, report.name, self._root)
            return kept if len(kept) == report.objects else []
        function = live_function(path, report.name, self._root)
        # A method: each live instance's own function, probed against its own traces.
        return [function] if function is not None else live_methods(path, report.name, self._root)

    def __call__(
        self, report: FunctionReport, signature: str, alias: str, edited: tuple[str, int] | None = None
    ) -> str | None:
        from tfretrace._tf.probe import probe_signature

        functions = self._functions(report, edited)
        if not functions:
            return _NO_NESTED_TRACE if edited is not None and "<locals>" in report.name else _NOT_FOUND
        if "<locals>" in report.name:
            # One def at module level in place of every object the outer def made: traced once, run
            # beside the traces of each.
            return probe_signature(functions[0], signature, alias, edited, also=functions[1:])
        for each in functions:
            said = probe_signature(each, signature, alias, edited)
            if said is not None:
                return said
        return None

    def argument(
        self, report: FunctionReport, param: str, dtypes: tuple[str, ...], edited: tuple[str, int] | None = None
    ) -> tuple[str | None, str | None, str | None, int]:
        from tfretrace._tf.probe import probe_argument

        functions = self._functions(report, edited)
        if not functions:
            return None, None, None, 0  # not asked: the planner keeps to what the source tells
        # Every live function (each instance's, for a method) must take the same dtype.
        said = [probe_argument(each, param, dtypes, edited) for each in functions]
        if any(found is None and why is None for found, why, _depends, _ran in said):
            return None, None, None, 0  # one could not be replayed: TensorFlow was not asked of all
        refused = [why for _found, why, _depends, _ran in said if why is not None]
        if refused:
            return None, refused[0], None, 0
        taken = {found for found, _why, _depends, _ran in said}
        if len(taken) > 1:
            listed = ", ".join(sorted(map(str, taken)))
            return None, f"instances of the method took different dtypes ({listed})", None, 0
        depends = next((d for _found, _why, d, _ran in said if d is not None), None)
        return said[0][0], None, depends, 0 if depends is not None else sum(ran for *_, ran in said)

    def zeros(self, report: FunctionReport, param: str, shape: tuple[int, ...], dtype: str) -> tuple[int, str | None]:
        from tfretrace._tf.zero_probe import probe_zeros

        functions = self._functions(report)
        if not functions:
            return 0, None  # not asked: the step stays as the kind declares it
        compared = 0
        for each in functions:
            ran, differ = probe_zeros(each, param, shape, dtype)
            compared += ran
            if differ is not None:
                return compared, differ
        return compared, None

    def relaxed(self, report: FunctionReport, opened: dict[str, tuple[int | None, ...]]) -> str | None:
        from tfretrace._tf.relaxed import probe_relaxed

        functions = self._functions(report)
        if not functions:
            return _NOT_FOUND
        # Each live function (each instance's, for a method) against its own traces.
        return next(filter(None, (probe_relaxed(each, opened) for each in functions)), None)

    def one_object(self, report: FunctionReport) -> str | None:
        from tfretrace._tf.live_functions import share_cells
        from tfretrace._tf.relaxed import probe_relaxed

        functions = self._functions(report)
        if len(functions) < 2:
            return _NOT_FOUND if not functions else None
        if not share_cells(functions):
            return _OTHER_CELLS
        # One of the objects the outer def made, traced afresh for every recorded call of each: where all
        # run alike, one object made once computes what each did.
        return probe_relaxed(functions[0], {}, also=functions[1:])

    def as_tuple(self, report: FunctionReport, param: str) -> tuple[int, str | None]:
        from tfretrace._tf.tuple_probe import probe_as_tuple

        compared = 0
        for each in self._functions(report):
            ran, differ = probe_as_tuple(each, param)
            compared += ran
            if differ is not None:
                return compared, differ
        return compared, None

    def unseeded(self, report: FunctionReport) -> str | None:
        from tfretrace._tf.probe import unseeded_draws

        functions = self._functions(report)
        found = [unseeded_draws(each) for each in functions]
        # Every live function's traces drew with no seed: a seeded one keeps the step unsafe.
        return found[0] if found and all(found) else None

    def random(self, report: FunctionReport) -> str | None:
        from tfretrace._tf.probe import random_op

        return next(filter(None, (random_op(each) for each in self._functions(report))), None)


def probe_live(root: str) -> Probe:
    """A probe for the functions of a run whose paths start at ``root``."""
    return _LiveProbe(root)
